// The budget card of a run a limit paused (`data-budget`): what the answer needs beyond which
// limit, Raise / End here, and what became of the decision. The person raises a run's own limit;
// a daily or monthly budget needs an admin, and the server's 403 says so on the card. A sub-agent's
// request (raised into the conversation's message) names the sub-agent that asks. A request the
// run's end closed before anyone decided it (stopped, interrupted by a new message) says so.
import { useState } from 'react';
import { decideApproval } from '../api';
import { Icon } from './Icon';
import type { PartContext } from './partContext';

interface BudgetData {
  approvalId: string;
  limit: string;
  message: string;
  raiseTo?: number;
  state: 'requested' | 'approved' | 'denied' | 'closed';
  reason?: string;
  subAgent?: { agent?: string | null };
}

const LABELS: Record<BudgetData['state'], string> = {
  requested: 'Budget reached',
  approved: 'Limit raised for this answer',
  denied: 'Ended at the limit',
  closed: 'Not decided',
};

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
  const state = data.state;
  const label = LABELS[state];
  return (
    <div className={`block approval budget budget-${state}`} data-testid="budget-card" data-state={state} data-approval-id={data.approvalId}>
      <div className="approval-head">
        <Icon name="alert" /> <span className="block-title">{label}</span>
      </div>
      {data.subAgent && (
        <p className="budget-origin" data-testid="budget-origin">
          Asked by {data.subAgent.agent ? `the ${data.subAgent.agent} sub-agent` : 'a sub-agent'}
        </p>
      )}
      <p className="budget-message">{data.message.charAt(0).toUpperCase() + data.message.slice(1)}.</p>
      {data.reason && state !== 'closed' && <p className="budget-reason">Reason: {data.reason}</p>}
      {state === 'closed' && (
        <p className="budget-reason muted" data-testid="budget-closed">
          {data.reason ? `${data.reason.charAt(0).toUpperCase()}${data.reason.slice(1)}: the limit was not raised.` : 'The run ended before a decision.'}
        </p>
      )}
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
