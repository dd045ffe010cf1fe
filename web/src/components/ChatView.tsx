// The chat page of one conversation: loads the stored messages, then useChat over the session's
// Chat (resume: true follows an active run: a full replay, then live), the message list, the
// input area (which also answers the one live question), stop, and regenerate of any answer (the
// old one stays on another branch). While a run works a message can still be sent: queued behind
// the run, steering it, or interrupting it (the server's `onNewMessage`); queued messages are
// listed, cancellable, until their run starts.
import { useChat } from '@ai-sdk/react';
import type { UIMessage } from 'ai';
import { useEffect, useRef, useState, useSyncExternalStore, type KeyboardEvent } from 'react';
import {
  abortRun,
  cancelQueued,
  getConversation,
  sendWhileWorking,
  toUIMessages,
  type ConversationSummary,
  type NewMessagePolicy,
  type WaitingMessage,
} from '../api';
import { metadataOf, toolCallOf, traceFacts, type MessageContext } from '../model';
import type { ChatSession, SessionHooks } from '../session';
import { existingSession, openSession } from '../sessions';
import { logUiError } from '../telemetry';
import { AgentPicker } from './AgentPicker';
import { BranchNav } from './BranchNav';
import { ErrorBoundary } from './ErrorBoundary';
import { Icon } from './Icon';
import { AssistantMessage, UserMessage } from './Message';
import { questionOf } from './QuestionCard';

/** Called with the messages after every change. Errors are logged, never shown in a message. */
export type MessageSubscriber = (messages: UIMessage[], session: ChatSession) => void;

export const subscribers = new Set<MessageSubscriber>();

export function ChatLoader({
  id,
  summary,
  hooks,
  fresh,
}: {
  id: string;
  summary?: ConversationSummary;
  hooks: SessionHooks;
  /** A conversation this page has just created: nothing stored to load. */
  fresh: boolean;
}) {
  const [session, setSession] = useState<ChatSession | undefined>(
    () => existingSession(id) ?? (fresh ? openSession(id, [], hooks) : undefined),
  );
  const [failure, setFailure] = useState<string>();
  useEffect(() => {
    if (session) return;
    let cancelled = false;
    getConversation(id)
      .then(detail => {
        if (cancelled) return;
        const opened = openSession(id, detail ? toUIMessages(detail.messages) : [], hooks);
        if (detail) opened.storedStatus = new Map(detail.messages.map(m => [m.id, m.status]));
        if (detail) opened.noteStored(detail);
        if (detail) opened.branches = detail.branches ?? [];
        setSession(opened);
      })
      .catch((error: unknown) => {
        if (!cancelled) setFailure(String(error));
      });
    return () => {
      cancelled = true;
    };
  }, [id, session, hooks]);
  if (failure) {
    return (
      <div className="chat-empty" role="alert">
        Could not load this conversation: {failure}
        <button type="button" onClick={() => setFailure(undefined)}>
          Try again
        </button>
      </div>
    );
  }
  if (!session) return <div className="chat-empty muted">Loading…</div>;
  // A conversation this page has just created has nothing to resume; asking anyway would race the
  // first POST (the resume could reach the server after the run started and follow it as well).
  return <ChatView session={session} summary={summary} resume={!(fresh && session.chat.messages.length === 0)} />;
}

function lastAssistantIndex(messages: UIMessage[]): number {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i].role === 'assistant') return i;
  return -1;
}

function ChatView(props: { session: ChatSession; summary?: ConversationSummary; resume: boolean }) {
  const { session, summary } = props;
  const [resume] = useState(props.resume); // decided once, on mount
  const { messages, status, sendMessage, regenerate } = useChat({ chat: session.chat, resume, throttle: 50 });
  useSyncExternalStore(session.subscribe, session.getVersion);
  const scroller = useRef<HTMLDivElement>(null);
  const nearBottom = useRef(true);
  const [draft, setDraft] = useState('');
  const [stopping, setStopping] = useState(false);
  const [policy, setPolicy] = useState<NewMessagePolicy>('queue');
  const [waitingMessages, setWaitingMessages] = useState<WaitingMessage[]>([]);
  /** The text held back until the user confirms that sending it cancels a pending approval. */
  const [confirming, setConfirming] = useState<string>();

  const busy = status === 'submitted' || status === 'streaming';
  const lastIndex = lastAssistantIndex(messages);

  const contextFor = (index: number): MessageContext => {
    const message = messages[index];
    const runId = metadataOf(message).runId;
    return {
      laterUserMessage: messages.slice(index + 1).some(m => m.role === 'user'),
      streaming: busy && index === messages.length - 1,
      serverActive: summary?.activeRunId != null && summary.activeRunId === runId,
      connectionLost: session.connection !== 'ok' && index === lastIndex,
      storedStatus: session.storedStatus.get(message.id),
      overlays: session.overlays,
    };
  };

  const lastFacts = lastIndex >= 0 ? traceFacts(messages[lastIndex], contextFor(lastIndex)) : null;
  const waiting = lastFacts?.state === 'waiting';
  const running = lastFacts?.state === 'running';
  // A message sent but not yet answered by the server (no stream yet): its run may not exist. A message
  // for a working run (queue, steer, interrupt) is a request of its own, and would overtake it.
  const starting = status === 'submitted' && !waiting && !running;
  const working = (status === 'streaming' && !waiting) || running;
  const liveQuestion = lastFacts?.state === 'waiting' ? lastFacts.liveQuestion : null;
  const runId = lastIndex >= 0 ? metadataOf(messages[lastIndex]).runId : undefined;
  const activeRunId = working || waiting ? (runId ?? summary?.activeRunId ?? undefined) : undefined;

  // Subscribers (auto-scroll, and any registered through window.stepline): after each change.
  useEffect(() => {
    const run = (name: string, fn: () => void) => {
      try {
        fn();
      } catch (error) {
        const last = lastIndex >= 0 ? messages[lastIndex] : undefined;
        const tool = last?.parts.map(toolCallOf).filter(t => t !== null).at(-1);
        logUiError(name === 'scroll' ? 'scroll' : 'subscriber', error, {
          ...session.context(),
          toolCallId: tool?.toolCallId,
          approvalId: tool?.approval?.id,
        });
      }
    };
    run('scroll', () => {
      const el = scroller.current;
      if (el && nearBottom.current) el.scrollTop = el.scrollHeight;
    });
    for (const subscriber of subscribers) run('subscriber', () => subscriber(messages, session));
  }, [messages, session, lastIndex]);

  // The server moved on while no stream was open (an approval expired, another tab answered):
  // follow the run again, or load the stored messages once it has ended.
  if (summary) session.noteStored(summary);
  const serverMark = `${summary?.status}:${summary?.activeRunId}:${summary?.updatedAt}`;
  const firstMark = useRef(true);
  const refreshWaiting = async () => {
    try {
      const detail = await getConversation(session.id);
      setWaitingMessages(detail?.waiting ?? []);
      // A queued message's run may start and end between two polls: load what this tab has not seen.
      const idle = session.chat.status === 'ready' || session.chat.status === 'error';
      const seen = new Set(session.chat.messages.map(m => m.id));
      if (detail && idle && detail.messages.some(m => !seen.has(m.id))) {
        await session.reload();
        if (detail.activeRunId) await session.reconnect();
      }
    } catch (error) {
      logUiError('refresh', error, session.context());
    }
  };
  useEffect(() => {
    if (summary) void refreshWaiting(); // a chat the server lists (a new one is not stored yet)
  }, [serverMark]); // eslint-disable-line react-hooks/exhaustive-deps
  useEffect(() => {
    if (firstMark.current) {
      firstMark.current = false; // on mount useChat's `resume: true` follows the active run
      return;
    }
    if (!summary || busy || session.connection === 'reconnecting') return; // (unreachable: the list is back, so is the server)
    const last = lastIndex >= 0 ? messages[lastIndex] : undefined;
    const lastMeta = last ? metadataOf(last) : {};
    const ended = lastMeta.completedAt !== undefined || lastMeta.abort !== undefined || lastMeta.error !== undefined;
    if (summary.activeRunId && summary.activeRunId === session.stepFailedRunId) {
      void session.reload(); // a step failed in the stream: follow the stored messages, not a replay of it
    } else if (summary.status === 'running' && summary.activeRunId) {
      // A run this tab has not seen (a queued message's): its user message is stored, load it first.
      const known = messages.some(m => metadataOf(m).runId === summary.activeRunId);
      void (known ? session.reconnect() : session.reload().then(() => session.reconnect()));
    } else if (summary.activeRunId === null && last && !ended && lastMeta.runId) {
      void session.reload();
    }
    // only when the server's view changes
  }, [serverMark]); // eslint-disable-line react-hooks/exhaustive-deps

  const pendingApproval =
    waiting && !liveQuestion && lastIndex >= 0
      ? messages[lastIndex].parts.map(toolCallOf).find(t => t?.state === 'approval-requested')
      : undefined;

  const submit = async (confirmed = false) => {
    const text = (confirmed ? confirming : draft)?.trim();
    if (!text) return;
    if (starting) return; // the draft stays: it can be sent once the run has started
    if (liveQuestion) {
      setDraft('');
      await session.answer(liveQuestion.toolCallId, text);
      return;
    }
    if (working) {
      setDraft('');
      try {
        await sendWhileWorking(session.id, text, policy, `msg-${crypto.randomUUID()}`);
        session.notice = undefined;
      } catch (error) {
        session.notice = `Could not send the message: ${error instanceof Error ? error.message : String(error)}`;
        setDraft(text);
      }
      await refreshWaiting();
      return;
    }
    if (pendingApproval && !confirmed) {
      setConfirming(text); // a new message cancels the approval: ask first
      return;
    }
    setConfirming(undefined);
    setDraft('');
    nearBottom.current = true;
    if (busy) await session.chat.stop(); // a resume stream following a waiting run: the user moves on
    session.notice = undefined;
    await sendMessage({ text });
  };

  const onKeyDown = (event: KeyboardEvent<HTMLTextAreaElement>) => {
    if (event.key === 'Enter' && !event.shiftKey && !event.nativeEvent.isComposing) {
      event.preventDefault();
      void submit();
    }
  };

  const stop = async () => {
    if (!activeRunId) return;
    setStopping(true);
    try {
      await abortRun(activeRunId);
      if (!(session.chat.status === 'streaming' || session.chat.status === 'submitted')) await session.reload();
    } catch (error) {
      logUiError('network', error, session.context({ runId: activeRunId }));
      session.notice = `Could not stop the run: ${String(error)}`;
    } finally {
      setStopping(false);
    }
  };

  const idle = !busy && !working && !waiting;
  const branchAt = (messageId: string) => session.branches.find(p => p.activeId === messageId);
  const onEdit = async (messageId: string, text: string) => {
    session.notice = undefined;
    nearBottom.current = true;
    await sendMessage({ text, messageId }); // the AI SDK's edit: the server starts a branch
    await session.reload(); // the server's ids for the edit, and its branching points
  };

  /** Regenerate this answer (the last one or any earlier one): the old one stays, on another branch. */
  const onRegenerate = (messageId: string) => {
    session.notice = undefined;
    void regenerate({ messageId }).then(() => session.reload()); // the server's ids and branching points
  };

  return (
    <div className="chat" data-testid="chat" data-chat-id={session.id} data-chat-status={status} data-connection={session.connection}>
      <div
        className="messages"
        ref={scroller}
        onScroll={e => {
          const el = e.currentTarget;
          nearBottom.current = el.scrollHeight - el.scrollTop - el.clientHeight < 80;
        }}
      >
        {messages.length === 0 && (
          <div className="chat-empty">
            <h2>Stepline</h2>
            <p className="muted">Durable agent runs: close the tab, come back, the run goes on.</p>
            {!summary && <AgentPicker session={session} />}
          </div>
        )}
        {messages.map((message, index) => (
          <ErrorBoundary key={message.id} context={() => session.context({ messageId: message.id })} label="This message">
            {branchAt(message.id) && <BranchNav point={branchAt(message.id)!} disabled={!idle} onSwitch={id => void session.switchBranch(id)} />}
            {message.role === 'user' ? (
              <UserMessage message={message} onEdit={idle ? text => void onEdit(message.id, text) : undefined} />
            ) : (
              <AssistantMessage
                message={message}
                session={session}
                context={contextFor(index)}
                canRegenerate={idle}
                onRegenerate={() => onRegenerate(message.id)}
                idle={idle}
              />
            )}
          </ErrorBoundary>
        ))}
      </div>
      {session.connection !== 'ok' && (
        <div className="banner network" data-testid="connection-banner" role="status">
          <Icon name="alert" />
          {session.connection === 'reconnecting' ? (
            <span>Connection lost, reconnecting…</span>
          ) : session.connection === 'unreachable' ? (
            <>
              <span>The server cannot be reached; trying again…</span>
              <button type="button" onClick={() => session.retryConnection()} data-testid="reconnect">
                Try now
              </button>
            </>
          ) : (
            <>
              <span>Connection lost. The run goes on on the server.</span>
              <button type="button" onClick={() => session.retryConnection()} data-testid="reconnect">
                Reconnect
              </button>
            </>
          )}
        </div>
      )}
      {waitingMessages.length > 0 && (
        <div className="waiting-messages" data-testid="waiting-messages">
          {waitingMessages.map(waitingMessage => (
            <div key={waitingMessage.id} className="waiting-message" data-testid="waiting-message" data-mode={waitingMessage.mode}>
              <Icon name="clock" />
              <span className="muted">{waitingMessage.mode === 'steer' ? 'For the next step:' : 'Queued:'}</span>
              <span className="waiting-text">
                {waitingMessage.parts.map(p => (p.type === 'text' ? p.text : '')).join(' ')}
              </span>
              {waitingMessage.mode === 'queue' && (
                <button
                  type="button"
                  className="link"
                  data-testid="cancel-queued"
                  onClick={() => void cancelQueued(session.id, waitingMessage.id).then(refreshWaiting)}
                >
                  Cancel
                </button>
              )}
            </div>
          ))}
        </div>
      )}
      {confirming !== undefined && pendingApproval && (
        <div className="banner notice" data-testid="approval-warning" role="alertdialog">
          <Icon name="alert" />
          <span>
            Sending this will cancel the pending approval of <strong>{pendingApproval.name}</strong>.
          </span>
          <button type="button" onClick={() => void submit(true)} data-testid="send-anyway">
            Send anyway
          </button>
          <button type="button" className="link" onClick={() => setConfirming(undefined)} data-testid="keep-approval">
            Keep it
          </button>
        </div>
      )}
      {session.notice && (
        <div className="banner notice" data-testid="notice" role="alert">
          <Icon name="alert" /> <span>{session.notice}</span>
        </div>
      )}
      <form
        className="composer"
        onSubmit={e => {
          e.preventDefault();
          void submit();
        }}
      >
        {liveQuestion && (
          <div className="live-question" data-testid="live-question">
            <div className="live-question-text">
              <Icon name="question" /> {questionOf(liveQuestion).question}
            </div>
            <div className="live-question-options">
              {questionOf(liveQuestion).options.map(option => (
                <button
                  key={option}
                  type="button"
                  onClick={() => void session.answer(liveQuestion.toolCallId, option)}
                  data-testid="question-option"
                >
                  {option}
                </button>
              ))}
              <button type="button" className="link" onClick={() => void session.answer(liveQuestion.toolCallId, null)}>
                Skip question
              </button>
            </div>
          </div>
        )}
        <div className="composer-row">
          <textarea
            value={draft}
            onChange={e => setDraft(e.target.value)}
            onKeyDown={onKeyDown}
            placeholder={
              liveQuestion
                ? 'Type your answer…'
                : starting
                  ? 'Starting the run…'
                  : working
                    ? 'The agent is working: queue a message, steer it, or interrupt it'
                    : 'Message Stepline (Enter to send, Shift+Enter for a new line)'
            }
            rows={2}
            aria-label="Message"
            data-testid="composer-input"
          />
          {(working || waiting) && (
            // While the run waits for an approval or an answer, it can be stopped too.
            <button type="button" className="stop" onClick={() => void stop()} disabled={!activeRunId || stopping} data-testid="stop">
              <Icon name="stop" /> Stop
            </button>
          )}
          {working && (
            <select
              value={policy}
              onChange={e => setPolicy(e.target.value as NewMessagePolicy)}
              aria-label="While the agent works"
              data-testid="new-message-policy"
            >
              <option value="queue">Queue</option>
              <option value="steer">Steer</option>
              <option value="interrupt">Interrupt</option>
            </select>
          )}
          <button type="submit" className="primary" disabled={!draft.trim() || starting} data-testid="send">
            {liveQuestion ? 'Answer' : working ? { queue: 'Queue', steer: 'Steer', interrupt: 'Interrupt' }[policy] : 'Send'}
          </button>
        </div>
      </form>
    </div>
  );
}
