// One chat's client state: the AI SDK Chat (useChat's externally managed instance, so a chat keeps
// streaming in the background while the user looks at another one), plus what the SDK does not
// hold: the approval cards' submit state, the connection state, and the ids for error logs.
//
// The stream itself is the SDK's: DefaultChatTransport sends and resumes, the SDK parses the SSE
// and reduces the chunks. The transport is given a `fetch` that only watches: it records each
// request's HTTP status (so a failed approval knows whether it reached the server), remembers the
// last event id (for the logs), and drops an SSE event whose `id:` (`{seq}.{index}`, increasing
// within one response) it has already passed, so the same events delivered twice never append
// the same delta twice (spec 000: replayed events must not produce duplicate parts).
import { Chat } from '@ai-sdk/react';
import {
  DefaultChatTransport,
  isToolUIPart,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  lastAssistantMessageIsCompleteWithToolCalls,
  type UIMessage,
} from 'ai';
import { approvalsRecorded, decideApproval, errorMessage, getConversation, toUIMessages } from './api';
import { apiFetch, apiUrl, authHeaders } from './http';
import { logUiError, type UiErrorContext } from './telemetry';

export type ApprovalPhase = 'submitting' | 'accepted' | 'failed' | 'expired' | 'conflict' | 'not-found';

/** What the UI knows about a decision the server has not streamed back yet. */
export interface ApprovalOverlay {
  phase: ApprovalPhase;
  approved: boolean;
  reason?: string;
  message?: string;
  via: 'chat' | 'webhook';
}

/**
 * `reconnecting`: following the run again; `unreachable`: the server could not be reached (a
 * restart, the network): retried with a back-off until it answers; `lost`: the server answered but
 * the stream could not be followed (the Reconnect button).
 */
export type Connection = 'ok' | 'reconnecting' | 'unreachable' | 'lost';

interface RequestRecord {
  method: string;
  status?: number;
  reachedServer: boolean;
  networkError?: string;
  done: boolean;
  endedWithoutDone: boolean;
}

export interface SessionHooks {
  /** A run started, ended or changed state: refresh what lists runs (the sidebar). */
  onRunsChanged(): void;
}

const RECONNECT_DELAY_MS = 800;
const AUTOMATIC_RECONNECTS = 1;
/** The pauses between attempts while the server cannot be reached; the last one repeats. */
const UNREACHABLE_RETRY_MS = [1000, 2000, 4000, 8000, 10_000];

export class ChatSession {
  readonly chat: Chat<UIMessage>;
  readonly overlays = new Map<string, ApprovalOverlay>();
  /**
   * The reason typed into each approval card, kept here rather than in the card: a resume's full
   * replay rebuilds the message (the cards mount again), and so does coming back to this chat.
   */
  readonly reasonDrafts = new Map<string, string>();
  /** The stored status of each message (`waiting`, `aborted`, `interrupted` …), as last loaded. */
  storedStatus = new Map<string, string>();
  /** The runs this page has seen waiting for an approval: their approvals are on the server. */
  readonly waitingRuns = new Set<string>();
  connection: Connection = 'ok';
  /** A notice about a request that failed (not an execution error: those are on the message). */
  notice: string | undefined;
  lastEventSeq: string | undefined;
  lastEventType: string | undefined;
  duplicatesDropped = 0;
  requests = 0;
  /** The run whose stream carried an `error` chunk: its state comes from the stored messages. */
  stepFailedRunId: string | undefined;
  /** What the chat's last error was: only a network or stream failure is a lost connection. */
  private errorKind: 'network' | 'http' | 'stream' | 'execution' | undefined;

  /** The agent a new chat asks for (sent as `body.agent`; the server keeps a chat's first choice). */
  agent: string | undefined;

  private lastRequest: RequestRecord | undefined;
  private readonly stockDecisions = new Map<string, { approved: boolean; reason?: string }>();
  private reconnects = 0;
  private unreachableRetries = 0;
  private retryTimer: number | undefined;
  /** A reconnect is waiting for its resume stream: its failure is handled there, not in onError. */
  private resuming = false;
  private version = 0;
  private readonly listeners = new Set<() => void>();

  constructor(
    readonly id: string,
    messages: UIMessage[],
    private readonly hooks: SessionHooks,
  ) {
    this.chat = new Chat<UIMessage>({
      id,
      messages,
      transport: new DefaultChatTransport<UIMessage>({
        api: apiUrl('/api/chat'),
        headers: authHeaders, // a function: each request (the POST and the resume GET) gets the current token
        fetch: this.watchingFetch,
        body: () => (this.agent ? { agent: this.agent } : {}),
      }),
      // The stock flow: the answer goes out once the stream that asked is over (Stepline ends the
      // POST stream with [DONE] when the run starts waiting).
      sendAutomaticallyWhen: ({ messages: all }) =>
        lastAssistantMessageIsCompleteWithApprovalResponses({ messages: all }) ||
        lastAssistantMessageIsCompleteWithToolCalls({ messages: all }),
      onError: error => this.handleError(error),
      onFinish: ({ isError, isAbort }) => this.handleFinish(isError, isAbort),
    });
  }

  // -- a tiny external store, for useSyncExternalStore ------------------------------------------

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  getVersion = (): number => this.version;

  private changed(): void {
    this.version += 1;
    for (const listener of this.listeners) listener();
  }

  // -- context for the logs -----------------------------------------------------------------------

  context(extra: UiErrorContext = {}): UiErrorContext {
    const last = [...this.chat.messages].reverse().find(m => m.role === 'assistant');
    const metadata = (last?.metadata ?? {}) as { runId?: string };
    return {
      conversationId: this.id,
      runId: metadata.runId,
      messageId: last?.id,
      lastEventType: this.lastEventType,
      lastEventSeq: this.lastEventSeq,
      ...extra,
    };
  }

  /** A stream is open (not narrowed by TypeScript: the status changes across awaits). */
  busy(): boolean {
    const status: string = this.chat.status;
    return status === 'streaming' || status === 'submitted';
  }

  // -- approvals ----------------------------------------------------------------------------------

  /**
   * Approve or deny. While the chat is idle this is the stock flow: `addToolApprovalResponse`, and
   * `sendAutomaticallyWhen` sends the continuation. While the chat follows a resume stream (after a
   * reload, or when it came back to a waiting run) the SDK will not send until that stream ends,
   * and Stepline's resume stream stays open through the wait; so the decision goes to the approval
   * webhook, and the open stream carries the run on (the server records the decision as a
   * `tool-approval-response` chunk, then the tool's output).
   */
  async decide(approvalId: string, approved: boolean, reason?: string): Promise<void> {
    const current = this.overlays.get(approvalId);
    if (current && current.phase !== 'failed') return; // submitting or settled: never twice
    const following = this.busy();
    this.setOverlay(approvalId, { phase: 'submitting', approved, reason, via: following ? 'webhook' : 'chat' });
    if (!following) {
      this.stockDecisions.set(approvalId, { approved, reason });
      this.notice = undefined;
      await this.chat.addToolApprovalResponse({ id: approvalId, approved, ...(reason ? { reason } : {}) });
      return;
    }
    // The stream open now may be the one whose step has not recorded the approval yet.
    await approvalsRecorded(this.id, this.runOfApproval(approvalId), this.waitingRuns);
    const outcome = await decideApproval(approvalId, approved, reason);
    if (outcome.kind === 'accepted') {
      this.setOverlay(approvalId, { phase: 'accepted', approved, reason, via: 'webhook' });
      // The server has the decision: so must the SDK's message. `sendAutomaticallyWhen` counts only
      // parts in `approval-responded`; a step's other approval decided the stock way after this
      // stream ended would otherwise wait for this one forever (the two-approvals hang). Applied
      // while a stream is open it sends nothing; after one it sends the continuation once the
      // step's last approval is answered (the server takes a decision it already has as it is).
      await this.chat.addToolApprovalResponse({ id: approvalId, approved, ...(reason ? { reason } : {}) });
      // The run goes on once the step's last approval is decided: follow it then. While another
      // still asks, the run waits, and a resume stream would only be held open through the wait.
      if (!this.busy() && !this.stillAsking()) void this.reconnect();
      return;
    }
    const phase: ApprovalPhase = outcome.kind === 'retryable' ? 'failed' : outcome.kind;
    this.setOverlay(approvalId, { phase, approved, reason, message: outcome.message, via: 'webhook' });
    if (phase !== 'failed') void this.reload();
  }

  /** The run of the message that asks for this approval. */
  private runOfApproval(approvalId: string): string | undefined {
    const message = this.chat.messages.find(m =>
      m.parts.some(part => isToolUIPart(part) && part.approval?.id === approvalId),
    );
    return (message?.metadata as { runId?: string } | undefined)?.runId;
  }

  /** What a read of the conversation says: a run waiting for an approval has recorded its approvals. */
  noteStored(detail: { status: string; activeRunId: string | null }): void {
    if (detail.status === 'waiting_approval' && detail.activeRunId) this.waitingRuns.add(detail.activeRunId);
  }

  /** The latest assistant message has an approval nobody has answered yet. */
  private stillAsking(): boolean {
    const last = [...this.chat.messages].reverse().find(m => m.role === 'assistant');
    return (last?.parts ?? []).some(part => isToolUIPart(part) && part.state === 'approval-requested');
  }

  private setOverlay(approvalId: string, overlay: ApprovalOverlay): void {
    const previous = this.overlays.get(approvalId);
    if (previous?.phase === 'accepted' && overlay.phase !== 'accepted') return; // accepted never rolls back
    this.overlays.set(approvalId, overlay);
    this.changed();
  }

  /** Stock path: the continuation was answered (2xx): the server has the decisions. */
  private acceptStockDecisions(): void {
    for (const [approvalId, decision] of this.stockDecisions) {
      this.setOverlay(approvalId, { phase: 'accepted', ...decision, via: 'chat' });
    }
    this.stockDecisions.clear();
  }

  /** Stock path: the continuation did not reach the server, or failed retryably: ask again. */
  private rollBackStockDecisions(message: string): void {
    const ids = new Set(this.stockDecisions.keys());
    this.chat.messages = this.chat.messages.map(m => ({
      ...m,
      parts: m.parts.map(part => {
        if (!isToolUIPart(part) || part.state !== 'approval-responded' || !ids.has(part.approval.id)) return part;
        const { approved: _approved, reason: _reason, ...request } = part.approval;
        return { ...part, state: 'approval-requested', approval: request } as unknown as typeof part;
      }),
    }));
    for (const [approvalId, decision] of this.stockDecisions) {
      this.overlays.set(approvalId, { phase: 'failed', ...decision, message, via: 'chat' });
    }
    this.stockDecisions.clear();
    this.changed();
  }

  private settleStockDecisions(status: number, message: string): void {
    const phase: ApprovalPhase = status === 410 ? 'expired' : status === 409 ? 'conflict' : 'not-found';
    for (const [approvalId, decision] of this.stockDecisions) {
      this.overlays.set(approvalId, { phase, ...decision, message, via: 'chat' });
    }
    this.stockDecisions.clear();
    this.changed();
    void this.reload();
  }

  // -- questions ----------------------------------------------------------------------------------

  /** The live question's answer (a client-side tool): `addToolOutput`, sent by `sendAutomaticallyWhen`. */
  async answer(toolCallId: string, answer: string | null): Promise<void> {
    if (this.busy()) {
      // Following a resume stream through the wait: there is no webhook for answers, and the SDK
      // only sends once no stream is open. Closing our stream does not touch the run.
      await this.chat.stop();
    }
    this.notice = undefined;
    if (answer === null) {
      await this.chat.addToolOutput({
        tool: 'ask_user_question',
        toolCallId,
        state: 'output-error',
        errorText: 'cancelled by the user',
      } as never);
    } else {
      await this.chat.addToolOutput({ tool: 'ask_user_question', toolCallId, output: { answer } } as never);
    }
  }

  // -- the connection -----------------------------------------------------------------------------

  /** Follow the chat's active run again (a full replay, then live); 204 leaves the chat as it is. */
  async reconnect(): Promise<void> {
    window.clearTimeout(this.retryTimer);
    if (this.connection !== 'unreachable') this.connection = 'reconnecting'; // it says so until the server answers
    this.changed();
    this.errorKind = undefined;
    this.resuming = true;
    try {
      await this.chat.resumeStream();
    } finally {
      this.resuming = false;
    }
    // A 204 (nothing active) leaves the chat's status as it was: an earlier execution error is not
    // a lost connection (a stale sidebar poll can ask to follow a run that has just failed). Nor is
    // a run that failed while it was followed: the stream carried its `error` chunk.
    const nothingActive = this.lastRequest?.method === 'GET' && this.lastRequest.status === 204;
    if (this.chat.status === 'error' && !nothingActive && this.errorKind !== 'execution') {
      if (this.errorKind === 'network') this.retryWhileUnreachable();
      else this.connection = 'lost';
    } else {
      this.serverAnswered();
      this.notice = undefined;
      // 204: nothing active. If the run ended while we were away, its end is in the stored messages.
      const last = [...this.chat.messages].reverse().find(m => m.role === 'assistant');
      const metadata = (last?.metadata ?? {}) as { runId?: string; completedAt?: number; abort?: unknown; error?: unknown };
      const ended = metadata.completedAt !== undefined || metadata.abort !== undefined || metadata.error !== undefined;
      if (!this.busy() && last && metadata.runId && (!ended || nothingActive)) await this.reload();
    }
    this.changed();
  }

  /** Replace the messages with the stored ones (the server's truth), when no stream is open. */
  async reload(): Promise<void> {
    if (this.busy()) return;
    try {
      const detail = await getConversation(this.id);
      if (!detail || this.busy()) return;
      this.storedStatus = new Map(detail.messages.map(m => [m.id, m.status]));
      this.noteStored(detail);
      this.chat.messages = toUIMessages(detail.messages);
      if (this.chat.status === 'error' && this.connection === 'ok' && detail.activeRunId === null) this.chat.clearError();
      this.changed();
    } catch (error) {
      logUiError('refresh', error, this.context());
    }
  }

  private handleError(error: Error): void {
    const request = this.lastRequest;
    const status = (error as { statusCode?: number }).statusCode ?? request?.status;
    // A resume a gateway answered for the server (502/503/504: it is restarting, or gone) is the
    // server not reached, as a failed fetch is.
    const gateway = request?.method === 'GET' && (status === 502 || status === 503 || status === 504);
    const disconnected =
      error instanceof TypeError || (request?.networkError !== undefined && !request.reachedServer) || gateway;
    if (disconnected) {
      this.errorKind = 'network';
      if (this.stockDecisions.size > 0 && request && !request.reachedServer) {
        this.rollBackStockDecisions('The decision did not reach the server');
      }
      logUiError('network', error, this.context());
      if (!this.resuming) this.scheduleReconnect(); // a reconnect's own failure: `reconnect` goes on
      return;
    }
    if (status !== undefined && status >= 400) {
      this.errorKind = 'http';
      const message = errorMessage(error.message);
      if (this.stockDecisions.size > 0) {
        if (status === 404 || status === 409 || status === 410) this.settleStockDecisions(status, message);
        else this.rollBackStockDecisions(message);
      }
      this.notice = message;
      this.changed();
      return;
    }
    if (error.name.startsWith('AI_')) {
      // A stream the SDK could not read (a protocol violation): logged, then followed again.
      this.errorKind = 'stream';
      logUiError('stream', error, this.context());
      this.notice = `The stream could not be read (${error.name}); reconnecting`;
      this.scheduleReconnect();
      return;
    }
    // An `error` chunk: a step of the run failed. The stock client stops reading there, but the
    // run's end (its metadata with the error) comes after it, or the server retries the step; the
    // stored message has the truth, so load it (and again whenever the server's view changes).
    this.errorKind = 'execution';
    this.stepFailedRunId = (this.context().runId ?? '') || undefined;
    setTimeout(() => void this.reload(), 500);
  }

  private handleFinish(isError: boolean, isAbort: boolean): void {
    this.hooks.onRunsChanged();
    if (isError || isAbort) return;
    if (this.lastRequest?.endedWithoutDone) {
      // The server closed the stream before the run's end (its time limit, or a read failure):
      // the run goes on; follow it again.
      this.scheduleReconnect();
      return;
    }
    if (this.connection !== 'ok') {
      this.connection = 'ok';
      this.changed();
    }
  }

  private scheduleReconnect(): void {
    if (this.reconnects >= AUTOMATIC_RECONNECTS) {
      this.connection = 'lost';
      this.changed();
      return;
    }
    this.reconnects += 1;
    this.connection = 'reconnecting';
    this.changed();
    setTimeout(() => {
      if (this.busy()) {
        // Another stream already follows the run (useChat's resume on mount, a reconnect that
        // came first): it carries the rest, and its own end decides what happens next.
        this.connection = 'ok';
        this.changed();
        return;
      }
      void this.reconnect().then(() => {
        if (this.connection === 'ok') this.reconnects = 0;
      });
    }, RECONNECT_DELAY_MS);
  }

  /** The server cannot be reached: try again after a pause that grows, until it answers. */
  private retryWhileUnreachable(): void {
    this.connection = 'unreachable';
    const delay = UNREACHABLE_RETRY_MS[Math.min(this.unreachableRetries, UNREACHABLE_RETRY_MS.length - 1)];
    this.unreachableRetries += 1;
    window.clearTimeout(this.retryTimer);
    this.retryTimer = window.setTimeout(() => {
      if (!this.busy()) void this.reconnect();
    }, delay);
  }

  /** A resume was answered: the connection is back; what lists runs is read again (the sidebar). */
  private serverAnswered(): void {
    const wasDown = this.connection !== 'ok';
    window.clearTimeout(this.retryTimer);
    this.connection = 'ok';
    this.reconnects = 0;
    this.unreachableRetries = 0;
    this.notice = undefined;
    if (wasDown) {
      this.hooks.onRunsChanged();
      this.changed();
    }
  }

  /** Manual reconnect (the "Reconnect" / "Try now" button). */
  retryConnection(): void {
    this.reconnects = 0;
    this.unreachableRetries = 0;
    void this.reconnect();
  }

  /** The chat is gone from the page: no attempt is left scheduled. */
  dispose(): void {
    window.clearTimeout(this.retryTimer);
    void this.chat.stop();
  }

  // -- the transport's fetch ------------------------------------------------------------------------

  private watchingFetch = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const method = (init?.method ?? 'GET').toUpperCase();
    const record: RequestRecord = { method, reachedServer: false, done: false, endedWithoutDone: false };
    this.lastRequest = record;
    this.requests += 1;
    let response: Response;
    try {
      response = await apiFetch(input, init); // a 401 renews the token, else signs in again
    } catch (error) {
      record.networkError = String(error);
      throw error;
    }
    record.reachedServer = true;
    record.status = response.status;
    // A resume the server answers (it streams, or 204: nothing to follow) ends an outage at once,
    // not when the resumed stream ends.
    if (method === 'GET' && (response.status === 200 || response.status === 204) && this.connection !== 'ok') this.serverAnswered();
    if (method === 'POST' && response.ok && this.stockDecisions.size > 0) this.acceptStockDecisions();
    if (method === 'POST' && response.ok) this.hooks.onRunsChanged(); // a run started or went on: the sidebar
    if (!response.ok || response.body == null || response.status === 204) return response;
    const body = response.body
      .pipeThrough(new TextDecoderStream())
      .pipeThrough(eventIdFilter(this, record))
      .pipeThrough(new TextEncoderStream());
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };

  /** Called by the event filter for every event it passes on. */
  noteEvent(id: string | undefined, data: string | undefined): void {
    if (id !== undefined) this.lastEventSeq = id;
    if (data !== undefined) {
      const type = /"type":"([^"]+)"/.exec(data)?.[1];
      if (type) this.lastEventType = type;
    }
  }
}

function position(id: string): [number, number] | null {
  const match = /^(\d+)(?:\.(\d+))?$/.exec(id.trim());
  if (!match) return null;
  return [Number(match[1]), match[2] === undefined ? Number.MAX_SAFE_INTEGER : Number(match[2])];
}

function after(a: [number, number], b: [number, number]): boolean {
  return a[0] > b[0] || (a[0] === b[0] && a[1] > b[1]);
}

/**
 * Passes SSE events through unchanged, except an event whose `id:` is not after the last id seen in
 * this response (the same event delivered again). It reads only the framing (`id:` lines, blank-line
 * separated events, `[DONE]`); the SDK parses the events.
 */
function eventIdFilter(session: ChatSession, record: RequestRecord): TransformStream<string, string> {
  let buffer = '';
  let last: [number, number] | null = null;
  const pass = (block: string, controller: TransformStreamDefaultController<string>) => {
    let id: string | undefined;
    let data: string | undefined;
    for (const line of block.split('\n')) {
      if (line.startsWith('id:')) id = line.slice(3).trim();
      else if (line.startsWith('data:')) data = line.slice(5).trim();
    }
    if (data === '[DONE]') record.done = true;
    const here = id === undefined ? null : position(id);
    if (here !== null) {
      if (last !== null && !after(here, last)) {
        session.duplicatesDropped += 1;
        return;
      }
      last = here;
    }
    session.noteEvent(id, data);
    controller.enqueue(block + '\n\n');
  };
  return new TransformStream<string, string>({
    transform(text, controller) {
      buffer += text.includes('\r') ? text.replace(/\r\n?/g, '\n') : text;
      const blocks = buffer.split('\n\n');
      buffer = blocks.pop() ?? '';
      for (const block of blocks) if (block.length > 0) pass(block, controller);
    },
    flush(controller) {
      if (buffer.trim().length > 0) pass(buffer, controller);
      if (!record.done) record.endedWithoutDone = true;
    },
  });
}

// -- the sessions of this page --------------------------------------------------------------------

const sessions = new Map<string, ChatSession>();

export function existingSession(id: string): ChatSession | undefined {
  return sessions.get(id);
}

export function openSession(id: string, messages: UIMessage[], hooks: SessionHooks): ChatSession {
  let session = sessions.get(id);
  if (!session) {
    session = new ChatSession(id, messages, hooks);
    sessions.set(id, session);
  }
  return session;
}

export function dropSession(id: string): void {
  const session = sessions.get(id);
  sessions.delete(id);
  session?.dispose();
}

export function allSessions(): ChatSession[] {
  return [...sessions.values()];
}
