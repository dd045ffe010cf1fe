// The approval card of a tool call: the tool's whole arguments, Approve / Deny with a reason, and
// what became of the decision (sent, taken, refused by the server: 404 / 409 / 410). On an ended
// run a decision can be changed ("Change my answer"): a fork with the other decision, a new branch.
import { useState } from 'react';
import { EXPIRED_REASON, closedByEnd, type ToolCall } from '../model';
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
    if (approval.reason === EXPIRED_REASON) return { view: 'expired', pending: false };
    // Closed by the run's end before anyone decided (stopped, interrupted): nobody denied it.
    if (closedByEnd(tool, ctx.closed)) return { view: 'not-answered', reason: approval.reason, pending: false };
    return { view: 'denied', reason: approval.reason, pending: false };
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
  // A decision the run went on with (not one its end closed: that run never reached the next step).
  const changeable =
    ctx.changeable && !askedBy && !pending && (view === 'approved' || view === 'denied') && !closedByEnd(tool, ctx.closed);
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
      {view === 'not-answered' && decidedReason && <p className="muted">Closed: {decidedReason}.</p>}
      {changeable && ctx.runId && (
        <ChangeDecision runId={ctx.runId} approvalId={approval.id} approved={view === 'approved'} ctx={ctx} />
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

/**
 * "Change my answer" on an ended run's decision: the other decision (with an optional reason) forks
 * the run at that approval; the new branch is shown, the old one stays behind ‹ ›.
 */
function ChangeDecision(props: { runId: string; approvalId: string; approved: boolean; ctx: PartContext }) {
  const { runId, approvalId, approved, ctx } = props;
  const [open, setOpen] = useState(false);
  const [reason, setReason] = useState('');
  const [sending, setSending] = useState(false);
  if (!open) {
    return (
      <div className="approval-actions">
        <button type="button" className="link" data-testid="change-answer" onClick={() => setOpen(true)}>
          Change my answer
        </button>
      </div>
    );
  }
  const change = async () => {
    setSending(true);
    const edit = { approvals: [{ approvalId, approved: !approved, ...(reason.trim() ? { reason: reason.trim() } : {}) }] };
    const forked = await ctx.session.changeAnswer(runId, edit);
    if (!forked) setSending(false);
  };
  return (
    <div className="approval-actions" data-testid="change-decision">
      <input type="text" placeholder="Reason (optional)" value={reason} disabled={sending} onChange={e => setReason(e.target.value)} aria-label="Reason" />
      <button type="button" className="primary" disabled={sending} onClick={() => void change()} data-testid="change-answer-send">
        {approved ? 'Deny instead' : 'Approve instead'}
      </button>
      <button type="button" className="link" disabled={sending} onClick={() => setOpen(false)}>
        Keep it
      </button>
      <p className="muted">Runs again from this decision, on a new branch; what the run did before it stays done.</p>
    </div>
  );
}
