// A sub-agent call in the trace: a collapsible block headed with the agent's name, its state and,
// once known, its duration and tokens, whose body is the child's own message rendered with the
// same part renderers as the conversation's (its tools, approvals, text, reasoning, and its own
// sub-agents, nested). While the child works the body is its preliminary outputs; once it has
// ended, its stored message (GET /api/runs/{id}), so a reloaded page shows what the live one did.
import { useEffect, useState, type ReactNode } from 'react';
import { closedMarkOf, formatDuration, summarise, type Part, type ToolCall } from '../model';
import {
  SUB_AGENT_LABELS,
  asChildMessage,
  readChildRun,
  remember,
  remembered,
  storedChildMessage,
  subAgentEntries,
  subAgentState,
  type ChildMessage,
  type ChildRun,
} from '../subAgents';
import { ErrorBoundary } from './ErrorBoundary';
import { Icon, Spinner } from './Icon';
import { ToolError } from './ToolError';
import { Markdown } from './Markdown';
import type { PartContext } from './partContext';
import { renderTraceParts } from './Parts';

/** The ended child run (null until read, or when it cannot be). */
function useChildRun(runId: string | undefined, ended: boolean): ChildRun | null {
  const [run, setRun] = useState<ChildRun | null>(null);
  useEffect(() => {
    if (!ended || !runId) return;
    let current = true;
    void readChildRun(runId).then(found => {
      if (current) setRun(found);
    });
    return () => {
      current = false;
    };
  }, [runId, ended]);
  return run && run.runId === runId ? run : null;
}

function FinalOutput({ output }: { output: unknown }) {
  if (typeof output === 'string') return <div className="process-text"><Markdown text={output} /></div>;
  return <pre className="json">{JSON.stringify(output ?? null, null, 2)}</pre>;
}

export function SubAgentBlock({ tool, ctx }: { tool: ToolCall; ctx: PartContext }) {
  const scope = ctx.scope ?? '';
  const depth = ctx.depth ?? 0;
  const entry = ctx.subAgents?.find(e => e.toolCallId === tool.toolCallId);
  const current = asChildMessage(tool.output);
  if (current && tool.preliminary) remember(scope, tool.toolCallId, current);
  const seen: ChildMessage | undefined = (tool.preliminary ? current : null) ?? remembered(scope, tool.toolCallId);
  const ended = tool.state === 'output-error' || (tool.state === 'output-available' && !tool.preliminary);
  const runId = entry?.runId ?? seen?.metadata?.runId;
  const run = useChildRun(runId, ended);
  const stored = run ? storedChildMessage(run) : null;
  const child = (ended ? stored : null) ?? seen ?? undefined;
  const state = subAgentState(tool, child, ctx.readOnly);
  const status = SUB_AGENT_LABELS[state];
  const agent = entry?.agent ?? seen?.metadata?.agent ?? run?.agent ?? tool.name;
  const tokens = entry?.usage?.totalTokens ?? run?.usage?.totalTokens;
  const startedAt = run?.startedAt ?? child?.metadata?.startedAt;
  const endedAt = run?.endedAt ?? child?.metadata?.endedAt;
  const duration = startedAt !== undefined && endedAt != null ? formatDuration(endedAt - startedAt) : undefined;
  const working = state === 'running' || state === 'approval' || state === 'question';
  const [userOpen, setUserOpen] = useState<boolean | null>(null);
  const open = userOpen ?? working;
  const childCtx: PartContext = {
    ...ctx,
    scope: child?.id ?? `${scope}/${tool.toolCallId}`,
    subAgents: subAgentEntries(child?.metadata),
    depth: depth + 1,
    live: ctx.live && !ended,
    changeable: false, // a fork is of the conversation's run, not of a sub-agent's
    closed: closedMarkOf(child?.metadata), // the child's own end closed its parts
  };
  const wrap = (key: string, node: ReactNode, part: Part) => (
    <ErrorBoundary key={key} context={() => ctx.session.context({ runId, toolCallId: (part as { toolCallId?: string }).toolCallId })}>
      {node}
    </ErrorBoundary>
  );
  const parts = (child?.parts ?? []).map((part, index) => ({ part, index })).filter(p => p.part.type !== 'step-start');
  return (
    <div
      className={`block sub-agent tone-${status.tone}`}
      id={depth === 0 ? `tool-${tool.toolCallId}` : undefined}
      data-testid="sub-agent-block"
      data-agent={agent}
      data-state={state}
      data-depth={depth}
      data-tool-call-id={tool.toolCallId}
      data-run-id={runId ?? ''}
      data-source={ended && stored ? 'stored' : child ? 'progress' : 'answer'}
    >
      <details
        open={open}
        onToggle={event => {
          const now = event.currentTarget.open;
          if (now !== open) setUserOpen(now);
        }}
      >
        <summary>
          <Icon name="agent" />
          <span className="block-title" data-testid="sub-agent-name">
            {agent}
          </span>
          <span className="block-summary">{summarise(tool.input, 60)}</span>
          {(duration || tokens !== undefined) && (
            <span className="muted small" data-testid="sub-agent-facts">
              {[duration, tokens !== undefined ? `${tokens} tokens` : undefined].filter(Boolean).join(' · ')}
            </span>
          )}
          <span className={`badge tone-${status.tone}`} data-testid="sub-agent-status">
            {working && state === 'running' && ctx.live ? <Spinner /> : null}
            {status.label}
          </span>
        </summary>
        {/* Rendered while collapsed too (the details hide it): its own sub-agents keep what they saw. */}
        <div className="block-body sub-agent-body" data-testid="sub-agent-body">
          {parts.length > 0 ? renderTraceParts(parts, childCtx, wrap) : !ended && <p className="muted">Starting…</p>}
          {ended && !child && tool.state === 'output-available' && <FinalOutput output={tool.output} />}
        </div>
      </details>
      <ToolError tool={tool} />
    </div>
  );
}
