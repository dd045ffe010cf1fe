// One message. An assistant message is one agent run: its ExecutionTrace (reasoning, tools,
// approvals, questions, sources, intermediate files, in the order of `parts`), then the final
// answer (the text after the last process part) as Markdown, then its artifacts, deduplicated.
import type { UIMessage } from 'ai';
import { useEffect, useRef, useState, type ReactNode } from 'react';
import {
  EXPIRED_REASON,
  QUESTION_TOOL,
  artifactsOf,
  formatDuration,
  layoutOf,
  metadataOf,
  toolCallOf,
  traceFacts,
  type MessageContext,
  type TraceFacts,
  type TraceState,
  type ToolCall,
} from '../model';
import type { ChatSession } from '../session';
import { ErrorBoundary } from './ErrorBoundary';
import { PreviewLink } from './FilePreview';
import { Icon, Spinner } from './Icon';
import { Markdown } from './Markdown';
import { ProcessPartFallback, renderTraceParts, type PartContext } from './Parts';
import { InspectButton } from './RunInspector';

/** Elapsed time from metadata.startedAt; ticks each second only while active, frozen otherwise. */
function useElapsed(startedAt: number | undefined, endedAt: number | undefined, active: boolean): number | undefined {
  const [now, setNow] = useState(() => Date.now());
  const frozen = useRef<number | undefined>(undefined);
  useEffect(() => {
    if (!active) return;
    frozen.current = undefined;
    setNow(Date.now());
    const timer = window.setInterval(() => setNow(Date.now()), 1000);
    return () => window.clearInterval(timer);
  }, [active]);
  if (startedAt === undefined) return undefined;
  if (endedAt !== undefined) return endedAt - startedAt;
  if (active) return now - startedAt;
  frozen.current ??= now; // stopped without an end time (incomplete): the time it stopped at
  return frozen.current - startedAt;
}

const INCOMPLETE_LABELS: Record<NonNullable<TraceFacts['incompleteReason']>, string> = {
  stopped: 'Stopped',
  'moved-on': 'Not completed',
  interrupted: 'Interrupted',
  connection: 'Connection lost',
};

function headerLabel(facts: TraceFacts, elapsed: string | undefined): string {
  const time = elapsed ? ` · ${elapsed}` : '';
  switch (facts.state) {
    case 'running':
      return `Running${time}`;
    case 'waiting':
      return `Waiting for you${time}`;
    case 'incomplete':
      return `${INCOMPLETE_LABELS[facts.incompleteReason ?? 'interrupted']}${time}`;
    case 'error':
      return `Something went wrong${time}`;
    case 'complete':
      return elapsed ? `Took ${elapsed}` : 'Done';
  }
}

/**
 * How the run's approvals were decided and how many of its tools failed, so a collapsed trace tells
 * an approved tool from a denied one, and a failed (or interrupted) tool from one that ran.
 */
export interface Decisions {
  approved: number;
  denied: number;
  expired: number;
  failed: number;
}

export function decisionsOf(tools: ToolCall[], refused: (approvalId: string) => boolean = () => false): Decisions {
  const decisions: Decisions = { approved: 0, denied: 0, expired: 0, failed: 0 };
  for (const tool of tools) {
    // A tool that ended in an error (it threw, or an earlier attempt was interrupted and it is not
    // run again); a question the person skipped is not a failure.
    if (tool.state === 'output-error' && tool.name !== QUESTION_TOOL) decisions.failed += 1;
    if (!tool.approval) continue;
    // The server refused this page's decision (409/410/404): what the page applied locally is not
    // counted; once the tool's outcome has come from the server (the run went on), that is.
    const outcome = tool.state === 'output-denied' || tool.state === 'output-available' || tool.state === 'output-error';
    if (refused(tool.approval.id) && !outcome) continue;
    const denied = tool.state === 'output-denied' || tool.approval.approved === false;
    if (denied) decisions[tool.approval.reason === EXPIRED_REASON ? 'expired' : 'denied'] += 1;
    else if (tool.approval.approved === true || tool.state === 'output-available' || tool.state === 'output-error') decisions.approved += 1;
  }
  return decisions;
}

function DecisionBadges({ decisions }: { decisions: Decisions }) {
  const shown = (['approved', 'denied', 'expired', 'failed'] as const).filter(k => decisions[k] > 0);
  if (shown.length === 0) return null;
  const tone = { approved: 'ok', denied: 'bad', expired: 'muted', failed: 'bad' } as const;
  const icon = { approved: 'check', denied: 'x', expired: 'clock', failed: 'alert' } as const;
  return (
    <span className="trace-decisions" data-testid="trace-decisions">
      {shown.map(kind => (
        <span key={kind} className={`badge tone-${tone[kind]}`} data-testid={`trace-${kind}`}>
          <Icon name={icon[kind]} /> {decisions[kind]} {kind}
        </span>
      ))}
    </span>
  );
}

export function ExecutionTrace({
  facts,
  startedAt,
  endedAt,
  stepCount,
  decisions,
  userOpen,
  setUserOpen,
  children,
}: {
  facts: TraceFacts;
  startedAt?: number;
  endedAt?: number;
  stepCount: number;
  decisions?: Decisions;
  /** What the person chose (null: not chosen); the message's artifact links open it too. */
  userOpen: boolean | null;
  setUserOpen: (open: boolean) => void;
  children: ReactNode;
}) {
  const active = facts.state === 'running' || facts.state === 'waiting';
  const open = active || (userOpen ?? facts.state === 'error'); // derived one way, never written back
  const elapsed = useElapsed(startedAt, endedAt, active);
  const label = headerLabel(facts, elapsed === undefined ? undefined : formatDuration(elapsed));
  const mark = traceMark(facts.state, (decisions?.failed ?? 0) > 0);
  return (
    <section
      className={`trace state-${facts.state}`}
      data-testid="execution-trace"
      data-trace-state={facts.state}
      data-open={String(open)}
      data-ticking={String(active)}
      data-trace-mark={mark.tone}
    >
      <button
        type="button"
        className="trace-head"
        aria-expanded={open}
        disabled={active}
        onClick={() => setUserOpen(!open)}
      >
        {active && facts.state === 'running' ? <Spinner /> : <Icon name={mark.icon} className={`trace-icon ${mark.tone}`} />}
        <span className="trace-label" data-testid="trace-label">
          {label}
        </span>
        {stepCount > 0 && <span className="muted trace-count">{stepCount} {stepCount === 1 ? 'tool' : 'tools'}</span>}
        {!active && decisions && <DecisionBadges decisions={decisions} />}
        {!active && <Icon name="chevron" className={open ? 'chevron open' : 'chevron'} />}
      </button>
      {open && <div className="trace-body">{children}</div>}
    </section>
  );
}

/** The trace's mark: a run that completed with a failed tool is not marked as a clean success. */
function traceMark(state: TraceState, failed: boolean): { icon: string; tone: string } {
  if (state === 'complete' && failed) return { icon: 'alert', tone: 'failed' };
  const icon = { running: 'clock', waiting: 'shield', incomplete: 'clock', error: 'alert', complete: 'check' }[state];
  return { icon, tone: state };
}

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
}

export function AssistantMessage({ message, session, context, canRegenerate, onRegenerate }: MessageProps) {
  const facts = traceFacts(message, context);
  const metadata = metadataOf(message);
  const layout = layoutOf(message);
  const artifacts = artifactsOf(message);
  const live = facts.state === 'running' || facts.state === 'waiting';
  const readOnly = facts.state === 'incomplete' || facts.state === 'error' && !context.streaming;
  const stopped = facts.state === 'incomplete' && facts.incompleteReason === 'stopped';
  const ctx: PartContext = { session, readOnly, live, stopped };
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
  const steps = tools.length;
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
          decisions={decisionsOf(tools, id => ['expired', 'conflict', 'not-found'].includes(session.overlays.get(id)?.phase ?? ''))}
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

export function UserMessage({ message }: { message: UIMessage }) {
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
    </article>
  );
}
