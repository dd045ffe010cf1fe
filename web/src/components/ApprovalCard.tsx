// The approval card of a tool call: the tool's whole arguments, Approve / Deny with a reason, and
// what became of the decision (sent, taken, refused by the server: 404 / 409 / 410).
import { useState } from 'react';
import { EXPIRED_REASON, type ToolCall } from '../model';
import { ToolArguments } from './Arguments';
import { Icon } from './Icon';
import type { PartContext } from './partContext';

type ApprovalView =
  | 'requested'
  | 'submitting'
  | 'approved'
  | 'denied'
  | 'expired'
  | 'conflict'
  | 'not-found'
  | 'not-answered';

function approvalView(tool: ToolCall, ctx: PartContext): { view: ApprovalView; reason?: string; pending: boolean } {
  const approval = tool.approval!;
  const overlay = ctx.session.overlays.get(approval.id);
  const deniedByServer = tool.state === 'output-denied' || (tool.state === 'approval-responded' && approval.approved === false);
  if (deniedByServer) {
    return approval.reason === EXPIRED_REASON
      ? { view: 'expired', pending: false }
      : { view: 'denied', reason: approval.reason, pending: false };
  }
  if (overlay && (overlay.phase === 'expired' || overlay.phase === 'conflict' || overlay.phase === 'not-found')) {
    // The server refused this page's decision (the continuation or the webhook answered 410/409/404):
    // that, not the decision the page applied locally, is what the card says.
    return { view: overlay.phase, pending: false };
  }
  if (tool.state !== 'approval-requested') {
    // approval-responded (approved), or the tool ran: approved. Sending is shown until the server took it.
    return { view: 'approved', reason: approval.reason, pending: overlay?.phase === 'submitting' };
  }
  if (overlay?.phase === 'accepted') return { view: overlay.approved ? 'approved' : 'denied', reason: overlay.reason, pending: true };
  if (overlay?.phase === 'submitting') return { view: 'submitting', pending: true };
  if (ctx.readOnly) return { view: 'not-answered', pending: false };
  return { view: 'requested', pending: false };
}

const APPROVAL_LABELS: Record<ApprovalView, string> = {
  requested: 'Approval needed',
  submitting: 'Sending your decision…',
  approved: 'Approved',
  denied: 'Denied',
  expired: 'Expired: no decision in time, the run went on without it',
  conflict: 'Already decided the other way',
  'not-found': 'This approval no longer exists',
  'not-answered': 'Not answered',
};

/**
 * `askedBy`: a sub-agent's request raised into the conversation's message says who asks. Inside a
 * sub-agent's block (`ctx.depth` > 0) the card only shows the request and its outcome: it is
 * decided in the raised card of the conversation's message (the same approval id).
 */
export function ToolApprovalCard({ tool, ctx, askedBy }: { tool: ToolCall; ctx: PartContext; askedBy?: string }) {
  const approval = tool.approval!;
  const [reason, setReasonState] = useState(() => ctx.session.reasonDrafts.get(approval.id) ?? '');
  const setReason = (value: string) => {
    ctx.session.reasonDrafts.set(approval.id, value);
    setReasonState(value);
  };
  const { view, reason: decidedReason, pending } = approvalView(tool, ctx);
  const overlay = ctx.session.overlays.get(approval.id);
  const nested = (ctx.depth ?? 0) > 0;
  const actionable = view === 'requested' && !nested;
  const submit = (approved: boolean) => {
    void ctx.session.decide(approval.id, approved, reason.trim() || undefined);
  };
  return (
    <div className={`approval view-${view}`} data-testid="approval-card" data-approval-state={view} data-approval-id={approval.id}>
      <div className="approval-head">
        <Icon name="shield" />
        <span>{APPROVAL_LABELS[view]}</span>
        {pending && view !== 'submitting' && <span className="muted"> · continuing…</span>}
        {askedBy && (
          <span className="muted" data-testid="approval-asked-by">
            {' '}
            · {askedBy}
          </span>
        )}
      </div>
      {nested && view === 'requested' && (
        <p className="muted" data-testid="approval-decided-above">
          Decided in the conversation's approval card below.
        </p>
      )}
      {approval.requestReason && <p className="muted">{approval.requestReason}</p>}
      <ToolArguments input={tool.input} />
      {decidedReason && (view === 'denied' || view === 'approved') && <p className="approval-reason">“{decidedReason}”</p>}
      {overlay?.phase === 'failed' && actionable && (
        <p className="approval-failed" data-testid="approval-failed">
          {(overlay.message ?? 'The decision did not reach the server').replace(/[;.\s]*try again\.?$/i, '')}; try again.
        </p>
      )}
      {overlay?.message && (view === 'conflict' || view === 'not-found' || view === 'expired') && (
        <p className="muted">{overlay.message}</p>
      )}
      {(actionable || (view === 'submitting' && !nested)) && (
        <div className="approval-actions">
          <input
            type="text"
            placeholder="Reason (optional)"
            value={reason}
            disabled={!actionable}
            onChange={e => setReason(e.target.value)}
            aria-label="Reason"
          />
          <button type="button" className="primary" disabled={!actionable} onClick={() => submit(true)}>
            Approve
          </button>
          <button type="button" disabled={!actionable} onClick={() => submit(false)}>
            Deny
          </button>
        </div>
      )}
    </div>
  );
}
