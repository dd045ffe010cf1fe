// One message. An assistant message is one agent run: its ExecutionTrace (reasoning, tools,
// approvals, questions, sources, intermediate files, in the order of `parts`), then the final
// answer (the text after the last process part) as Markdown, then its artifacts, deduplicated.
import type { UIMessage } from 'ai';
import { useEffect, useState, type ReactNode } from 'react';
import { artifactsOf, closedMarkOf, layoutOf, metadataOf, toolCallOf, traceFacts, type MessageContext, type ToolCall } from '../model';
import type { ChatSession } from '../session';
import { NOT_UNDONE } from './BranchNav';
import { ErrorBoundary } from './ErrorBoundary';
import { ExecutionTrace, decisionsOf } from './ExecutionTrace';
import { PreviewLink } from './FilePreview';
import { Icon } from './Icon';
import { Markdown } from './Markdown';
import type { PartContext } from './partContext';
import { ProcessPartFallback } from './PartFallback';
import { renderTraceParts } from './Parts';
import { InspectButton } from './RunInspector';
import { RAISED_PREFIX, subAgentEntries } from '../subAgents';

/**
 * The step an artifact link asked for: once it is in the page (the trace opened on the same click),
 * it is scrolled to, its details opened and marked for a moment. Returns the step shown last.
 */
function useStepFocus(): [string | undefined, (toolCallId: string) => void] {
  const [request, setRequest] = useState<{ toolCallId: string; serial: number }>();
  const [shown, setShown] = useState<string>();
  useEffect(() => {
    if (!request) return;
    const element = document.getElementById(`tool-${request.toolCallId}`);
    if (!element) return;
    const details = element.querySelector('details');
    if (details) details.open = true;
    element.scrollIntoView({ block: 'center' });
    element.classList.add('focused');
    setShown(request.toolCallId);
    const timer = window.setTimeout(() => element.classList.remove('focused'), 1500);
    return () => window.clearTimeout(timer);
  }, [request]);
  return [shown, toolCallId => setRequest(previous => ({ toolCallId, serial: (previous?.serial ?? 0) + 1 }))];
}

export interface MessageProps {
  message: UIMessage;
  session: ChatSession;
  context: MessageContext;
  canRegenerate: boolean;
  onRegenerate: () => void;
  /** The chat is idle (nothing streams, works or waits): an ended run's answers can be changed. */
  idle: boolean;
}

export function AssistantMessage({ message, session, context, canRegenerate, onRegenerate, idle }: MessageProps) {
  const facts = traceFacts(message, context);
  const metadata = metadataOf(message);
  const layout = layoutOf(message);
  const artifacts = artifactsOf(message);
  const live = facts.state === 'running' || facts.state === 'waiting';
  const readOnly = facts.state === 'incomplete' || facts.state === 'error' && !context.streaming;
  const stopped = facts.state === 'incomplete' && facts.incompleteReason === 'stopped';
  const changeable = idle && facts.ended && !live && metadata.runId !== undefined;
  const ctx: PartContext = {
    session,
    readOnly,
    live,
    stopped,
    scope: message.id,
    subAgents: subAgentEntries(message.metadata),
    depth: 0,
    runId: metadata.runId,
    changeable,
    closed: closedMarkOf(message.metadata),
  };
  const endedAt = metadata.completedAt ?? metadata.abort?.at ?? metadata.error?.at;
  const lastAnswer = layout.answer.at(-1)?.part;
  const showTrace = layout.trace.length > 0 || live || metadata.startedAt !== undefined || facts.state === 'error';
  const logContext = (part?: unknown) => () => {
    const tool = part ? toolCallOf(part as never) : null;
    return session.context({
      messageId: message.id,
      runId: metadata.runId,
      toolCallId: tool?.toolCallId,
      approvalId: tool?.approval?.id,
    });
  };
  const wrap = (key: string, node: ReactNode, part: unknown) => (
    <ErrorBoundary key={key} context={logContext(part)}>
      {node}
    </ErrorBoundary>
  );
  const tools = layout.trace.map(t => toolCallOf(t.part)).filter((t): t is ToolCall => t !== null);
  const steps = tools.filter(t => !t.toolCallId.startsWith(RAISED_PREFIX)).length; // a raised request is a child's call
  const [traceOpen, setTraceOpen] = useState<boolean | null>(null);
  const [shownStep, showStep] = useStepFocus();
  return (
    <article
      className="message assistant"
      data-testid="assistant-message"
      data-message-id={message.id}
      data-run-id={metadata.runId ?? ''}
      data-state={facts.state}
    >
      {showTrace && (
        <ExecutionTrace
          facts={facts}
          startedAt={metadata.startedAt}
          endedAt={endedAt}
          stepCount={steps}
          decisions={decisionsOf(tools, ctx.closed, id => ['expired', 'conflict', 'not-found'].includes(session.overlays.get(id)?.phase ?? ''))}
          userOpen={traceOpen}
          setUserOpen={setTraceOpen}
        >
          {renderTraceParts(layout.trace, ctx, wrap)}
          {layout.trace.length === 0 && (
            <p className="muted">
              {facts.state === 'running'
                ? 'Starting…'
                : facts.state === 'error'
                  ? 'The run failed before any step finished.'
                  : 'No tools or reasoning in this run.'}
            </p>
          )}
        </ExecutionTrace>
      )}
      <div className="final-answer" data-testid="final-answer">
        {layout.answer.map(({ part, index }) =>
          part.type === 'text'
            ? wrap(
                `a${index}`,
                <Markdown text={part.text} cursor={context.streaming && part === lastAnswer && part.state === 'streaming'} />,
                part,
              )
            : null,
        )}
      </div>
      {artifacts.length > 0 && (
        <div className="artifacts" data-testid="artifacts">
          {artifacts.map(a => (
            <span key={a.key} className="artifact-item">
              <PreviewLink className="artifact-card" testId="artifact-card" file={{ url: a.url, title: a.title, mediaType: a.mediaType }}>
                <Icon name="download" />
                <span className="artifact-title">{a.title}</span>
                {a.mediaType && a.mediaType !== a.title && <span className="muted">{a.mediaType}</span>}
              </PreviewLink>
              {a.toolCallId && (
                <button
                  type="button"
                  className="link artifact-source"
                  data-testid="artifact-step"
                  data-shown={String(shownStep === a.toolCallId)}
                  onClick={() => {
                    setTraceOpen(true); // a collapsed trace has no blocks in the page: open it first
                    showStep(a.toolCallId!);
                  }}
                >
                  step
                </button>
              )}
            </span>
          ))}
        </div>
      )}
      {facts.state === 'error' && (
        <div className="message-error" data-testid="message-error" role="alert">
          <Icon name="alert" />
          <span>{metadata.error?.message ?? 'The run failed.'}</span>
          {canRegenerate && (
            <button type="button" onClick={onRegenerate} data-testid="retry">
              Retry
            </button>
          )}
        </div>
      )}
      {!live && metadata.runId && !(facts.state !== 'error' && canRegenerate) && (
        <div className="message-actions">
          <InspectButton runId={metadata.runId} />
        </div>
      )}
      {facts.state !== 'error' && canRegenerate && (
        <div className="message-actions">
          <button type="button" className="link" onClick={onRegenerate} data-testid="regenerate">
            <Icon name="refresh" /> Regenerate
          </button>
          {!live && metadata.runId && <InspectButton runId={metadata.runId} />}
          {metadata.usage?.totalTokens !== undefined && (
            <span className="muted">{metadata.usage.totalTokens} tokens</span>
          )}
        </div>
      )}
    </article>
  );
}

/** A user message; `onEdit` (when the chat is idle) offers the pencil: the edit starts a new branch. */
export function UserMessage({ message, onEdit }: { message: UIMessage; onEdit?: (text: string) => void }) {
  const [editing, setEditing] = useState<string>();
  const text = message.parts.map(p => (p.type === 'text' ? p.text : '')).join('');
  if (editing !== undefined && onEdit) {
    return (
      <article className="message user editing" data-testid="user-message" data-message-id={message.id}>
        <textarea className="edit-text" data-testid="edit-text" value={editing} onChange={e => setEditing(e.target.value)} rows={3} />
        <p className="muted small">Sending starts a new branch; the current one stays (‹ › switches). {NOT_UNDONE}</p>
        <div className="edit-actions">
          <button type="button" className="link" data-testid="edit-cancel" onClick={() => setEditing(undefined)}>
            Cancel
          </button>
          <button
            type="button"
            data-testid="edit-send"
            disabled={editing.trim() === ''}
            onClick={() => {
              setEditing(undefined);
              onEdit(editing.trim());
            }}
          >
            Send
          </button>
        </div>
      </article>
    );
  }
  return (
    <article className="message user" data-testid="user-message" data-message-id={message.id}>
      {message.parts.map((part, i) =>
        part.type === 'text' ? (
          <div key={i} className="user-text">
            {part.text}
          </div>
        ) : part.type === 'file' ? (
          <PreviewLink key={i} file={{ url: part.url, title: part.filename ?? part.mediaType, mediaType: part.mediaType, filename: part.filename }}>
            {part.filename ?? part.mediaType}
          </PreviewLink>
        ) : part.type === 'step-start' ? null : (
          // Anything else a client sent with the message (a data-* part of an integration):
          // the diagnosable fallback, never nothing.
          <ProcessPartFallback key={i} part={part} />
        ),
      )}
      {onEdit && (
        <button type="button" className="link edit-button" data-testid="edit-message" aria-label="Edit" title="Edit (starts a new branch)" onClick={() => setEditing(text)}>
          <Icon name="pencil" />
        </button>
      )}
    </article>
  );
}
