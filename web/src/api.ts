// The Stepline REST routes the UI uses besides the chat stream (which the AI SDK's transport owns).
import type { UIMessage } from 'ai';
import { apiFetch, apiUrl } from './http';

export type ConversationStatus = 'idle' | 'running' | 'waiting_approval' | 'waiting_user' | 'failed';

export interface ConversationSummary {
  id: string;
  title: string | null;
  status: ConversationStatus;
  activeRunId: string | null;
  /** The agent answering the conversation (fixed by its first message). */
  agent?: string | null;
  createdAt: number;
  updatedAt: number;
}

export interface AgentTool {
  name: string;
  description: string | null;
  approval: 'required' | 'per-call' | 'none';
  clientSide: boolean;
}

export interface AgentInfo {
  name: string;
  description: string | null;
  model: string;
  tools: AgentTool[];
}

export interface AgentList {
  default: string;
  agents: AgentInfo[];
}

export interface StoredMessage {
  id: string;
  role: 'user' | 'assistant' | 'system';
  parts: UIMessage['parts'];
  metadata: Record<string, unknown> | null;
  status: string;
  runId: string | null;
}

/** A message sent while a run worked, not answered yet: queued (its own run next) or steering the run. */
export interface WaitingMessage {
  id: string;
  mode: 'queue' | 'steer';
  parts: UIMessage['parts'];
  runId: string;
  queuedAt: number;
}

/** A branching point of the active branch: the alternatives that follow `parentId`, oldest first. */
export interface BranchPoint {
  parentId: string | null;
  siblingIds: string[];
  /** The sibling shown (on the active branch). */
  activeId: string;
}

export interface ConversationDetail extends ConversationSummary {
  /** The messages of the active branch. */
  messages: StoredMessage[];
  branches?: BranchPoint[];
  /** The messages waiting behind (or steering) the active run, in order. */
  waiting?: WaitingMessage[];
}

/** What a message sent while a run works does (the server's `onNewMessage`). */
export type NewMessagePolicy = 'queue' | 'steer' | 'interrupt';

/**
 * Send a message while a run works (`POST /api/chat` with `onNewMessage`). The answer is not read
 * here: the chat follows the run that answers it (a queued run once it starts, the steered run's
 * own stream); an error body is thrown as its message.
 */
export async function sendWhileWorking(chatId: string, text: string, policy: NewMessagePolicy, messageId: string): Promise<void> {
  const controller = new AbortController();
  const message = { id: messageId, role: 'user', parts: [{ type: 'text', text }] };
  const response = await apiFetch(apiUrl('/api/chat'), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ id: chatId, messages: [message], trigger: 'submit-message', onNewMessage: policy }),
    signal: controller.signal,
  });
  if (!response.ok) throw new HttpError(response.status, errorMessage(await response.text()));
  controller.abort(); // the message is stored before the stream starts; this tab follows the run its own way
}

/** Make the branch through `messageId` the active one; the conversation as it is then. */
export async function switchBranch(chatId: string, messageId: string): Promise<ConversationDetail> {
  const response = await apiFetch(apiUrl(`/api/conversations/${encodeURIComponent(chatId)}/branch`), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messageId }),
  });
  if (!response.ok) throw new HttpError(response.status, errorMessage(await response.text()));
  return (await response.json()) as ConversationDetail;
}

/** A changed decision or answer, for "Change my answer" (`POST /api/runs/{id}/fork`). */
export type ForkEdit =
  | { approvals: { approvalId: string; approved: boolean; reason?: string }[] }
  | { answers: { toolCallId: string; output: unknown }[] };

/** The fork the server started: a new run on a new branch, the active one. */
export interface ForkStarted {
  runId: string;
  conversationId: string;
  messageId: string;
}

/** Fork an ended run at the wait `edit` changes; refused (4xx) with the server's message. */
export async function forkRun(runId: string, edit: ForkEdit): Promise<ForkStarted> {
  const response = await apiFetch(apiUrl(`/api/runs/${encodeURIComponent(runId)}/fork`), {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(edit),
  });
  if (!response.ok) throw new HttpError(response.status, errorMessage(await response.text()));
  return (await response.json()) as ForkStarted;
}

/** Cancel a queued message before its run starts (404: it has started, or was cancelled). */
export async function cancelQueued(chatId: string, messageId: string): Promise<void> {
  const path = `/api/conversations/${encodeURIComponent(chatId)}/queue/${encodeURIComponent(messageId)}`;
  const response = await apiFetch(apiUrl(path), { method: 'DELETE' });
  if (!response.ok && response.status !== 404) throw new HttpError(response.status, errorMessage(await response.text()));
}

/** The message text of an API error body, `{"error": {"status", "message"}}`, or the text itself. */
export function errorMessage(text: string): string {
  try {
    const body = JSON.parse(text) as { error?: { message?: string } };
    if (body && typeof body.error?.message === 'string') return body.error.message;
  } catch {
    // not JSON: the text is the message
  }
  return text;
}

async function getJson<T>(path: string): Promise<T> {
  const response = await apiFetch(apiUrl(path), { headers: { accept: 'application/json' } });
  if (!response.ok) throw new HttpError(response.status, errorMessage(await response.text()));
  return (await response.json()) as T;
}

export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

/** The deployment's agents (a new chat names one in its body; the first is the default). */
export async function listAgents(): Promise<AgentList> {
  return getJson<AgentList>('/api/agents');
}

export interface Spending {
  tokens: number;
  /** Absent when a call's model has no price. */
  costUsd?: number;
  calls: number;
  unpricedCalls: number;
}

export interface PeriodUsage extends Spending {
  period: string;
  agents: Record<string, Spending>;
  limitTokens?: number;
  limitUsd?: number;
}

export interface UsageView {
  day: PeriodUsage;
  month: PeriodUsage;
}

/** The caller's own usage today and this month. */
export async function getUsage(): Promise<UsageView> {
  return getJson<UsageView>('/api/usage');
}

export async function listConversations(): Promise<ConversationSummary[]> {
  const page = await getJson<{ conversations: ConversationSummary[] }>('/api/conversations?limit=100');
  return page.conversations;
}

/** The conversation with its stored messages; null when it does not exist (yet). */
export async function getConversation(id: string): Promise<ConversationDetail | null> {
  try {
    return await getJson<ConversationDetail>(`/api/conversations/${encodeURIComponent(id)}`);
  } catch (error) {
    if (error instanceof HttpError && error.status === 404) return null;
    throw error;
  }
}

export function toUIMessages(stored: StoredMessage[]): UIMessage[] {
  return stored
    .filter(m => m.role === 'user' || m.role === 'assistant')
    .map(m => ({ id: m.id, role: m.role, parts: m.parts, ...(m.metadata ? { metadata: m.metadata } : {}) }));
}

export type DecisionOutcome =
  | { kind: 'accepted' }
  | { kind: 'expired'; message: string }
  | { kind: 'conflict'; message: string }
  | { kind: 'not-found'; message: string }
  | { kind: 'retryable'; message: string };

/** The approval webhook. `retryable` means the decision did not (certainly) reach the server. */
export async function decideApproval(approvalId: string, approved: boolean, reason?: string): Promise<DecisionOutcome> {
  let response: Response;
  try {
    response = await apiFetch(apiUrl(`/api/approvals/${encodeURIComponent(approvalId)}`), {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(reason ? { approved, reason } : { approved }),
    });
  } catch (error) {
    return { kind: 'retryable', message: `could not reach the server (${String(error)})` };
  }
  if (response.ok) return { kind: 'accepted' };
  const message = errorMessage(await response.text().catch(() => ''));
  if (response.status === 410) return { kind: 'expired', message };
  if (response.status === 409) return { kind: 'conflict', message };
  if (response.status === 404) return { kind: 'not-found', message };
  return { kind: 'retryable', message: `${response.status}: ${message}` };
}

/** How often, and how long in all, a decision waits for the server to have recorded the approval. */
const RECORDED_POLL_MS = 250;
const RECORDED_WAIT_MS = 10_000;

/**
 * Resolves once the server has recorded the run's approvals: `waitingRuns` holds the runs this page
 * has seen waiting for an approval (from any read of the conversation); else the conversation is
 * read until its run `runId` waits, for up to RECORDED_WAIT_MS. A step streams its approval
 * requests before it records them (when the step ends, with the run's `waiting_approval`, in one
 * write), so a decision made at once on a stream still open could reach the server before the
 * approval exists (a 404 for a live approval).
 */
export async function approvalsRecorded(conversationId: string, runId: string | undefined, waitingRuns: Set<string>): Promise<void> {
  const deadline = Date.now() + RECORDED_WAIT_MS;
  while (runId !== undefined && !waitingRuns.has(runId) && Date.now() < deadline) {
    let detail: ConversationDetail | null;
    try {
      detail = await getConversation(conversationId);
    } catch {
      return; // the server cannot be reached: the decision will not either, and says so
    }
    if (detail?.status === 'waiting_approval' && detail.activeRunId) waitingRuns.add(detail.activeRunId);
    if (!waitingRuns.has(runId)) await new Promise(resolve => window.setTimeout(resolve, RECORDED_POLL_MS));
  }
}

export async function abortRun(runId: string): Promise<void> {
  const response = await apiFetch(apiUrl(`/api/runs/${encodeURIComponent(runId)}/abort`), { method: 'POST' });
  if (!response.ok) throw new HttpError(response.status, errorMessage(await response.text()));
}

export async function deleteConversation(id: string): Promise<void> {
  const response = await apiFetch(apiUrl(`/api/conversations/${encodeURIComponent(id)}`), { method: 'DELETE' });
  if (!response.ok && response.status !== 404) throw new HttpError(response.status, errorMessage(await response.text()));
}
