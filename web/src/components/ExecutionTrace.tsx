// The execution trace's frame: its header (state, timer, tool count, the decisions and failures of
// a collapsed trace) and its body, open while the run is active or when the person opens it.
import { useEffect, useRef, useState, type ReactNode } from 'react';
import { EXPIRED_REASON, QUESTION_TOOL, closedByEnd, formatDuration, type ClosedMark, type TraceFacts, type TraceState, type ToolCall } from '../model';
import { Icon, Spinner } from './Icon';

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

export function decisionsOf(tools: ToolCall[], closed: ClosedMark, refused: (approvalId: string) => boolean = () => false): Decisions {
  const decisions: Decisions = { approved: 0, denied: 0, expired: 0, failed: 0 };
  for (const tool of tools) {
    // A tool that ended in an error (it threw, or an earlier attempt was interrupted and it is not
    // run again); a question the person skipped is not a failure.
    // A part the run's end closed (stopped, interrupted) did not fail, and nobody denied it.
    const closedHere = closedByEnd(tool, closed);
    if (tool.state === 'output-error' && tool.name !== QUESTION_TOOL && !closedHere) decisions.failed += 1;
    if (!tool.approval || (closedHere && tool.state === 'output-denied')) continue;
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
