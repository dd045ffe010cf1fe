// The budget card of a run a limit paused (`data-budget`): what the answer needs beyond which
// limit, Raise / End here, and what became of the decision. The person raises a run's own limit;
// a daily or monthly budget needs an admin, and the server's 403 says so on the card. A sub-agent's
// request (raised into the conversation's message) names the sub-agent that asks.
import { useState } from 'react';
import { decideApproval } from '../api';
import { Icon } from './Icon';
import type { PartContext } from './partContext';

interface BudgetData {
  approvalId: string;
  limit: string;
  message: string;
  raiseTo?: number;
  state: 'requested' | 'approved' | 'denied';
  reason?: string;
  subAgent?: { agent?: string | null };
}

function amount(limit: string, value: number | undefined): string {
  if (value === undefined) return '';
  return limit.endsWith('_usd') ? `$${value.toFixed(2)}` : value.toLocaleString();
}

export function BudgetCard({ data, ctx }: { data: BudgetData; ctx: PartContext }) {
  const [phase, setPhase] = useState<'idle' | 'sending' | 'sent' | 'refused'>('idle');
  const [message, setMessage] = useState<string>('');
  const decide = async (approved: boolean) => {
    setPhase('sending');
    const outcome = await decideApproval(data.approvalId, approved);
    if (outcome.kind === 'accepted') {
      setPhase('sent');
      if (!ctx.session.busy()) void ctx.session.reconnect();
      return;
    }
    setPhase('refused');
    setMessage(outcome.message);
  };
  // Inside a sub-agent's block the request is the child's own: it is decided at the conversation's card.
  const nested = (ctx.depth ?? 0) > 0;
  const open = data.state === 'requested' && !ctx.readOnly && phase !== 'sent' && !nested;
  const label =
    data.state === 'approved' ? 'Limit raised for this answer' : data.state === 'denied' ? 'Ended at the limit' : 'Budget reached';
  return (
    <div className={`block approval budget budget-${data.state}`} data-testid="budget-card" data-state={data.state}>
      <div className="approval-head">
        <Icon name="alert" /> <span className="block-title">{label}</span>
      </div>
      {data.subAgent && (
        <p className="budget-origin" data-testid="budget-origin">
          Asked by {data.subAgent.agent ? `the ${data.subAgent.agent} sub-agent` : 'a sub-agent'}
        </p>
      )}
      <p className="budget-message">{data.message.charAt(0).toUpperCase() + data.message.slice(1)}.</p>
      {data.reason && <p className="budget-reason">Reason: {data.reason}</p>}
      {open && (
        <div className="approval-actions">
          <button type="button" disabled={phase === 'sending'} onClick={() => void decide(true)} data-testid="budget-approve">
            Raise to {amount(data.limit, data.raiseTo)} for this answer
          </button>
          <button type="button" disabled={phase === 'sending'} onClick={() => void decide(false)} data-testid="budget-deny">
            End here
          </button>
        </div>
      )}
      {nested && data.state === 'requested' && <p className="muted">Decided in the conversation's budget card below.</p>}
      {phase === 'sent' && data.state === 'requested' && <p className="budget-status">Decision sent…</p>}
      {phase === 'refused' && (
        <p className="budget-status error" data-testid="budget-refused">
          {message}
        </p>
      )}
    </div>
  );
}
