// The approvals of one chat as far as the page knows them, beside the SDK's message: what became of
// each decision the page sent (the card's state until the server streams the outcome back), the
// reason typed into each card, the runs seen waiting (their approvals are recorded on the server),
// and the decisions that go out with the stock continuation, until it is answered.
import type { Chat } from '@ai-sdk/react';
import { isToolUIPart, type UIMessage } from 'ai';
import { approvalsRecorded, decideApproval } from './api';

export type ApprovalPhase = 'submitting' | 'accepted' | 'failed' | 'expired' | 'conflict' | 'not-found';

/** What the UI knows about a decision the server has not streamed back yet. */
export interface ApprovalOverlay {
  phase: ApprovalPhase;
  approved: boolean;
  reason?: string;
  message?: string;
  via: 'chat' | 'webhook';
}

export interface Decision {
  approved: boolean;
  reason?: string;
}

export class ApprovalBook {
  readonly overlays = new Map<string, ApprovalOverlay>();
  /**
   * The reason typed into each approval card, kept here rather than in the card: a resume's full
   * replay rebuilds the message (the cards mount again), and so does coming back to this chat.
   */
  readonly reasonDrafts = new Map<string, string>();
  /** The runs this page has seen waiting for an approval: their approvals are on the server. */
  readonly waitingRuns = new Set<string>();
  /** Decisions sent with the stock continuation (`addToolApprovalResponse`), until it is answered. */
  private readonly withContinuation = new Map<string, Decision>();

  constructor(private readonly changed: () => void) {}

  set(approvalId: string, overlay: ApprovalOverlay): void {
    const previous = this.overlays.get(approvalId);
    if (previous?.phase === 'accepted' && overlay.phase !== 'accepted') return; // accepted never rolls back
    this.overlays.set(approvalId, overlay);
    this.changed();
  }

  /** What a read of the conversation says: a run waiting for an approval has recorded its approvals. */
  noteStored(detail: { status: string; activeRunId: string | null }): void {
    if (detail.status === 'waiting_approval' && detail.activeRunId) this.waitingRuns.add(detail.activeRunId);
  }

  sendWithContinuation(approvalId: string, decision: Decision): void {
    this.withContinuation.set(approvalId, decision);
  }

  get continuationPending(): boolean {
    return this.withContinuation.size > 0;
  }

  /** The continuation was answered (2xx): the server has the decisions. */
  acceptContinuation(): void {
    for (const [approvalId, decision] of this.withContinuation) {
      this.set(approvalId, { phase: 'accepted', ...decision, via: 'chat' });
    }
    this.withContinuation.clear();
  }

  /** The continuation did not reach the server, or failed retryably: the cards ask again. Returns their ids. */
  failContinuation(message: string): Set<string> {
    const ids = new Set(this.withContinuation.keys());
    for (const [approvalId, decision] of this.withContinuation) {
      this.overlays.set(approvalId, { phase: 'failed', ...decision, message, via: 'chat' });
    }
    this.withContinuation.clear();
    this.changed();
    return ids;
  }

  /** The server refused the continuation's decisions (410 expired, 409 decided the other way, 404). */
  refuseContinuation(status: number, message: string): void {
    const phase: ApprovalPhase = status === 410 ? 'expired' : status === 409 ? 'conflict' : 'not-found';
    for (const [approvalId, decision] of this.withContinuation) {
      this.overlays.set(approvalId, { phase, ...decision, message, via: 'chat' });
    }
    this.withContinuation.clear();
    this.changed();
  }
}

/** The messages with these approvals asked again (`approval-requested`, no decision). */
export function decisionsTakenBack(messages: UIMessage[], ids: Set<string>): UIMessage[] {
  return messages.map(m => ({
    ...m,
    parts: m.parts.map(part => {
      if (!isToolUIPart(part) || part.state !== 'approval-responded' || !ids.has(part.approval.id)) return part;
      const { approved: _approved, reason: _reason, ...request } = part.approval;
      return { ...part, state: 'approval-requested', approval: request } as unknown as typeof part;
    }),
  }));
}

/** The run of the message that asks for this approval. */
export function runOfApproval(messages: UIMessage[], approvalId: string): string | undefined {
  const message = messages.find(m => m.parts.some(part => isToolUIPart(part) && part.approval?.id === approvalId));
  return (message?.metadata as { runId?: string } | undefined)?.runId;
}

/** The latest assistant message has an approval nobody has answered yet. */
export function stillAsking(messages: UIMessage[]): boolean {
  const last = [...messages].reverse().find(m => m.role === 'assistant');
  return (last?.parts ?? []).some(part => isToolUIPart(part) && part.state === 'approval-requested');
}

/** What deciding needs of the chat's session. */
export interface DecidingSession {
  readonly id: string;
  readonly chat: Chat<UIMessage>;
  readonly approvals: ApprovalBook;
  notice: string | undefined;
  busy(): boolean;
  reconnect(): Promise<void>;
  reload(): Promise<void>;
}

/**
 * Approve or deny. While the chat is idle this is the stock flow: `addToolApprovalResponse`, and
 * `sendAutomaticallyWhen` sends the continuation. While the chat follows a resume stream (after a
 * reload, or when it came back to a waiting run) the SDK will not send until that stream ends,
 * and Stepline's resume stream stays open through the wait; so the decision goes to the approval
 * webhook, and the open stream carries the run on (the server records the decision as a
 * `tool-approval-response` chunk, then the tool's output).
 */
export async function decide(session: DecidingSession, approvalId: string, approved: boolean, reason?: string): Promise<void> {
  const current = session.approvals.overlays.get(approvalId);
  if (current && current.phase !== 'failed') return; // submitting or settled: never twice
  const following = session.busy();
  session.approvals.set(approvalId, { phase: 'submitting', approved, reason, via: following ? 'webhook' : 'chat' });
  if (!following) {
    session.approvals.sendWithContinuation(approvalId, { approved, reason });
    session.notice = undefined;
    await session.chat.addToolApprovalResponse({ id: approvalId, approved, ...(reason ? { reason } : {}) });
    return;
  }
  // The stream open now may be the one whose step has not recorded the approval yet.
  await approvalsRecorded(session.id, runOfApproval(session.chat.messages, approvalId), session.approvals.waitingRuns);
  const outcome = await decideApproval(approvalId, approved, reason);
  if (outcome.kind === 'accepted') {
    session.approvals.set(approvalId, { phase: 'accepted', approved, reason, via: 'webhook' });
    // The server has the decision: so must the SDK's message. `sendAutomaticallyWhen` counts only
    // parts in `approval-responded`; a step's other approval decided the stock way after this
    // stream ended would otherwise wait for this one forever (the two-approvals hang). Applied
    // while a stream is open it sends nothing; after one it sends the continuation once the
    // step's last approval is answered (the server takes a decision it already has as it is).
    await session.chat.addToolApprovalResponse({ id: approvalId, approved, ...(reason ? { reason } : {}) });
    // The run goes on once the step's last approval is decided: follow it then. While another
    // still asks, the run waits, and a resume stream would only be held open through the wait.
    if (!session.busy() && !stillAsking(session.chat.messages)) void session.reconnect();
    return;
  }
  const phase: ApprovalPhase = outcome.kind === 'retryable' ? 'failed' : outcome.kind;
  session.approvals.set(approvalId, { phase, approved, reason, message: outcome.message, via: 'webhook' });
  if (phase !== 'failed') void session.reload();
}
