// One chat's client state: the AI SDK Chat (useChat's externally managed instance, so a chat keeps
// streaming in the background while the user looks at another one), plus what the SDK does not
// hold: the approvals as the page knows them (approvals.ts), the connection and its attempts
// (connection.ts), and the ids for error logs; the page's sessions are in sessions.ts.
//
// The stream itself is the SDK's: DefaultChatTransport sends and resumes, the SDK parses the SSE
// and reduces the chunks. The transport is given a `fetch` that only watches (eventIdFilter.ts):
// it records each request's HTTP status (so a failed approval knows whether it reached the
// server), remembers the last event id (for the logs), and drops an SSE event whose `id:` it has
// already passed, so the same events delivered twice never append the same delta twice.
import { Chat } from '@ai-sdk/react';
import {
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  lastAssistantMessageIsCompleteWithToolCalls,
  type UIMessage,
} from 'ai';
import {
  errorMessage,
  forkRun,
  getConversation,
  switchBranch,
  toUIMessages,
  type BranchPoint,
  type ConversationDetail,
  type ForkEdit,
} from './api';
import { ApprovalBook, decide, decisionsTakenBack, type ApprovalOverlay } from './approvals';
import { apiUrl, authHeaders } from './http';
import { ConnectionState, type Connection } from './connection';
import { recordedFetch, type RequestRecord } from './eventIdFilter';
import { rememberChunk, withoutRaised } from './subAgents';
import { logUiError, type UiErrorContext } from './telemetry';
import { lastRunEnded } from './model';



export interface SessionHooks {
  /** A run started, ended or changed state: refresh what lists runs (the sidebar). */
  onRunsChanged(): void;
}


export class ChatSession {
  readonly chat: Chat<UIMessage>;
  readonly approvals = new ApprovalBook(() => this.changed());
  /** The branching points of the shown branch, as last loaded (an edit or a regeneration made each). */
  branches: BranchPoint[] = [];
  /** The stored status of each message (`waiting`, `aborted`, `interrupted` …), as last loaded. */
  storedStatus = new Map<string, string>();
  /** The connection's state and its scheduled attempts. */
  private readonly link = new ConnectionState({
    reconnect: () => this.reconnect(),
    busy: () => this.busy(),
    changed: () => this.changed(),
    back: () => this.hooks.onRunsChanged(),
  });
  /** A notice about a request that failed (not an execution error: those are on the message). */
  notice: string | undefined;
  lastEventSeq: string | undefined;
  lastEventType: string | undefined;
  /** The message the open stream writes (its `start` names it): a sub-agent's progress is remembered under it. */
  private streamMessageId: string | undefined;
  duplicatesDropped = 0;
  requests = 0;
  /** The run whose stream carried an `error` chunk: its state comes from the stored messages. */
  stepFailedRunId: string | undefined;
  /** What the chat's last error was: only a network or stream failure is a lost connection. */
  private errorKind: 'network' | 'http' | 'stream' | 'execution' | undefined;

  /** The agent a new chat asks for (sent as `body.agent`; the server keeps a chat's first choice). */
  agent: string | undefined;

  private lastRequest: RequestRecord | undefined;
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
      // POST stream with [DONE] when the run starts waiting). Never for a run that ended: a stream
      // that followed it through its end (a resume stream when Stop came) ends normally, with the
      // parts the end closed looking answered, and a continuation would only be refused (409).
      sendAutomaticallyWhen: ({ messages: all }) =>
        !lastRunEnded(all) &&
        (lastAssistantMessageIsCompleteWithApprovalResponses({ messages: all }) ||
          lastAssistantMessageIsCompleteWithToolCalls({ messages: withoutRaised(all) })),
      onError: error => this.handleError(error),
      onFinish: ({ isError, isAbort }) => this.handleFinish(isError, isAbort),
    });
  }

  get connection(): Connection {
    return this.link.state;
  }

  /** What the cards show of the decisions the page sent. */
  get overlays(): Map<string, ApprovalOverlay> {
    return this.approvals.overlays;
  }

  get reasonDrafts(): Map<string, string> {
    return this.approvals.reasonDrafts;
  }

  noteStored(detail: { status: string; activeRunId: string | null }): void {
    this.approvals.noteStored(detail);
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

  /** Approve or deny (`decide` in approvals.ts: the stock continuation, or the webhook while a stream is open). */
  decide(approvalId: string, approved: boolean, reason?: string): Promise<void> {
    return decide(this, approvalId, approved, reason);
  }

  /** The continuation's decisions did not reach the server (or failed retryably): the cards ask again. */
  private askAgain(message: string): void {
    const ids = this.approvals.failContinuation(message);
    this.chat.messages = decisionsTakenBack(this.chat.messages, ids);
    this.changed();
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
    this.link.cancel();
    if (this.link.state !== 'unreachable') this.link.state = 'reconnecting'; // it says so until the server answers
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
      if (this.errorKind === 'network') this.link.retryWhileUnreachable();
      else this.link.state = 'lost';
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
      this.show(detail);
    } catch (error) {
      logUiError('refresh', error, this.context());
    }
  }

  /** Show another branch (‹ n/m ›): the one through `messageId`, as the server answers it. */
  async switchBranch(messageId: string): Promise<void> {
    if (this.busy()) return;
    try {
      this.show(await switchBranch(this.id, messageId));
    } catch (error) {
      logUiError('network', error, this.context({ messageId }));
      this.notice = `Could not switch branches: ${String(error)}`;
      this.changed();
    }
  }

  /**
   * "Change my answer" on an ended run: fork it with the changed decision or answer, then show the
   * new branch (the server makes it the active one) and follow its run. A refusal is the notice.
   */
  async changeAnswer(runId: string, edit: ForkEdit): Promise<boolean> {
    if (this.busy()) return false;
    this.notice = undefined;
    try {
      await forkRun(runId, edit);
    } catch (error) {
      logUiError('network', error, this.context({ runId }));
      this.notice = `Could not change the answer: ${error instanceof Error ? error.message : String(error)}`;
      this.changed();
      return false;
    }
    await this.reload();
    await this.reconnect();
    return true;
  }

  private show(detail: ConversationDetail): void {
    this.storedStatus = new Map(detail.messages.map(m => [m.id, m.status]));
    this.branches = detail.branches ?? [];
    this.approvals.noteStored(detail);
    this.chat.messages = toUIMessages(detail.messages);
    if (this.chat.status === 'error' && this.link.state === 'ok' && detail.activeRunId === null) this.chat.clearError();
    this.changed();
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
      if (this.approvals.continuationPending && request && !request.reachedServer) {
        this.askAgain('The decision did not reach the server');
      }
      logUiError('network', error, this.context());
      if (!this.resuming) this.link.scheduleReconnect(); // a reconnect's own failure: `reconnect` goes on
      return;
    }
    if (status !== undefined && status >= 400) {
      this.errorKind = 'http';
      const message = errorMessage(error.message);
      if (this.approvals.continuationPending) {
        if (status === 404 || status === 409 || status === 410) {
          this.approvals.refuseContinuation(status, message);
          void this.reload();
        } else {
          this.askAgain(message);
        }
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
      this.link.scheduleReconnect();
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
      this.link.scheduleReconnect();
      return;
    }
    if (this.link.state !== 'ok') {
      this.link.state = 'ok';
      this.changed();
    }
  }

  /** Manual reconnect (the "Reconnect" / "Try now" button). */
  retryConnection(): void {
    this.link.retryNow();
    void this.reconnect();
  }

  /** A resume was answered: the connection is back (the notice of the outage goes with it). */
  private serverAnswered(): void {
    this.notice = undefined;
    this.link.answered();
  }

  /** The chat is gone from the page: no attempt is left scheduled. */
  dispose(): void {
    this.link.cancel();
    void this.chat.stop();
  }

  // -- the transport's fetch ------------------------------------------------------------------------

  private watchingFetch = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const record: RequestRecord = { method: (init?.method ?? 'GET').toUpperCase(), reachedServer: false, done: false, endedWithoutDone: false };
    this.lastRequest = record;
    this.requests += 1;
    return recordedFetch(input, init, record, this, response => {
      // A resume the server answers (it streams, or 204: nothing to follow) ends an outage at once,
      // not when the resumed stream ends.
      const resumed = record.method === 'GET' && (response.status === 200 || response.status === 204);
      if (resumed && this.link.state !== 'ok') this.serverAnswered();
      if (record.method === 'POST' && response.ok && this.approvals.continuationPending) this.approvals.acceptContinuation();
      if (record.method === 'POST' && response.ok) this.hooks.onRunsChanged(); // a run started or went on: the sidebar
    });
  };

  /** Called by the event filter for every event it passes on. */
  noteEvent(id: string | undefined, data: string | undefined): void {
    if (id !== undefined) this.lastEventSeq = id;
    if (data !== undefined) {
      const type = /"type":"([^"]+)"/.exec(data)?.[1];
      if (type) this.lastEventType = type;
      if (type === 'start') this.streamMessageId = /"messageId":"([^"]+)"/.exec(data)?.[1] ?? this.streamMessageId;
      if (type === 'tool-output-available') {
        rememberChunk(data, this.streamMessageId ?? this.chat.messages.findLast(m => m.role === 'assistant')?.id);
      }
    }
  }
}
