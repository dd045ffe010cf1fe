// The run inspector: one run step by step, as recorded by the server (so it works after a restart
// and for runs of any age). Each step: the model request as sent (instructions, messages, tools
// with their schemas, settings, provider options — masked when recorded), the answer, tokens,
// timings (queued, time to first token, duration), retries and why, and each tool call with its
// input, output, duration and who decided its approval. An agent-tool call's child run is in the
// sub-agent tree, each one opening its own inspector on top of this one.
import { useEffect, useRef, useState, type ReactNode } from 'react';
import {
  fetchRunSteps,
  type InspectedRequest,
  type InspectedRun,
  type InspectedStep,
  type InspectedSubAgent,
} from '../inspect';
import { formatDuration } from '../model';
import { Icon } from './Icon';
import './inspector.css';

function ms(value: number | null | undefined): string {
  if (value === null || value === undefined) return '—';
  return value < 1000 ? `${value} ms` : formatDuration(value);
}

function Json({ value, testId }: { value: unknown; testId?: string }) {
  return (
    <pre className="inspect-json" data-testid={testId}>
      {typeof value === 'string' ? value : JSON.stringify(value, null, 2)}
    </pre>
  );
}

function Section({ title, children, open = false }: { title: string; children: ReactNode; open?: boolean }) {
  return (
    <details className="inspect-section" open={open}>
      <summary>{title}</summary>
      {children}
    </details>
  );
}

function textOf(content: unknown): string {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) return JSON.stringify(content);
  return content
    .map((p: { type?: string; text?: string; toolName?: string }) =>
      p.type === 'text' || p.type === 'reasoning' ? (p.text ?? '') : `[${p.type}${p.toolName ? ` ${p.toolName}` : ''}]`,
    )
    .join(' ');
}

function tokens(usage: Record<string, number> | null): string {
  return `${usage?.inputTokens ?? '—'} in / ${usage?.outputTokens ?? '—'} out tokens`;
}

function SubAgentTree({ subAgents }: { subAgents: InspectedSubAgent[] }) {
  return (
    <ul className="inspect-tree">
      {subAgents.map(sub => (
        <li key={sub.runId} data-testid="inspect-sub-agent" data-run={sub.runId}>
          <strong>{sub.agent ?? sub.toolName}</strong> <span className="badge">{sub.status}</span>{' '}
          <span className="muted">
            {tokens(sub.usage)}
            {sub.endedAt !== null && ` · ${formatDuration(sub.endedAt - sub.startedAt)}`}
          </span>{' '}
          <InspectButton runId={sub.runId} />
          {sub.subAgents.length > 0 && <SubAgentTree subAgents={sub.subAgents} />}
        </li>
      ))}
    </ul>
  );
}

function RequestView({ request }: { request: InspectedRequest }) {
  return (
    <div className="inspect-request" data-testid="inspect-request">
      <Section title={`Instructions (${request.instructions.length})`} open>
        {request.instructions.map((m, i) => (
          <Json key={i} value={textOf(m.content)} />
        ))}
      </Section>
      <Section title={`Messages (${request.messages?.length ?? 0})`} open>
        {(request.messages ?? []).map((m, i) => (
          <div key={i} className="inspect-message" data-testid="inspect-message">
            <span className="badge">{m.role}</span> <span>{textOf(m.content)}</span>
            <details>
              <summary className="muted">as sent</summary>
              <Json value={m} />
            </details>
          </div>
        ))}
      </Section>
      <Section title={`Tools (${request.tools.length})`} open>
        {request.tools.map(tool => (
          <details key={tool.name} className="inspect-tool-def" data-testid="inspect-tool-def">
            <summary>
              <strong>{tool.name}</strong> {tool.description && <span className="muted">{tool.description}</span>}
            </summary>
            <Json value={tool.inputSchema ?? tool.args ?? {}} testId={`tool-schema-${tool.name}`} />
          </details>
        ))}
      </Section>
      <Section title="Settings">
        <Json value={{ model: `${request.provider}:${request.model}`, ...request.settings, toolChoice: request.toolChoice }} testId="inspect-settings" />
        {request.providerOptions && <Json value={request.providerOptions} />}
        {request.headers && <Json value={request.headers} />}
      </Section>
    </div>
  );
}

function StepView({ step }: { step: InspectedStep }) {
  const usage = step.usage ?? {};
  return (
    <section className="inspect-step" data-testid="inspect-step" data-step={step.stepNumber}>
      <header className="inspect-step-head">
        <strong>Step {step.stepNumber + 1}</strong>
        <span className="badge">{step.finishReason ?? step.status}</span>
        <span data-testid="inspect-tokens">
          {usage.inputTokens ?? '—'} in · {usage.outputTokens ?? '—'} out tokens
          {step.cost !== null && ` · $${step.cost.toFixed(4)}`}
        </span>
        <span className="muted" data-testid="inspect-timings">
          queued {ms(step.timings.queuedMs)} · first token {ms(step.timings.timeToFirstTokenMs)} · took {ms(step.timings.durationMs)}
        </span>
      </header>
      {step.retries.length > 0 && (
        <p className="inspect-retries" data-testid="inspect-retries">
          <Icon name="refresh" /> Retried:{' '}
          {step.retries.map(r => `attempt ${r.attempt + 1} (${r.reason ?? r.error})`).join(', ')}
        </p>
      )}
      {step.request ? <RequestView request={step.request} /> : <p className="muted">No request recorded for this step.</p>}
      {step.response && (
        <Section title="Response" open>
          {step.response.reasoning && <Json value={step.response.reasoning} />}
          {step.response.text && <Json value={step.response.text} testId="inspect-answer" />}
          {step.response.toolCalls.map(call => (
            <div key={call.toolCallId}>
              <span className="badge">call</span> {call.toolName} <Json value={call.input} />
            </div>
          ))}
        </Section>
      )}
      {step.tools.map(tool => (
        <div key={tool.toolCallId} className="inspect-tool-run" data-testid="inspect-tool-run">
          <strong>{tool.toolName}</strong> <span className="badge">{tool.status}</span> <span className="muted">{ms(tool.durationMs)}</span>
          {tool.approval && (
            <span className="muted" data-testid="inspect-approval">
              {' '}· {tool.approval.decision ?? tool.approval.status}
              {tool.approval.decidedBy && ` by ${tool.approval.decidedBy}`}
            </span>
          )}
          {tool.subAgent && (
            <span className="muted" data-testid="inspect-tool-sub-agent">
              {' '}· answered by the {tool.subAgent.agent ?? 'sub-agent'} run ({tool.subAgent.status}){' '}
              <InspectButton runId={tool.subAgent.runId} />
            </span>
          )}
          <Json value={tool.input} />
          <Json value={tool.error ?? tool.output} />
        </div>
      ))}
    </section>
  );
}

function InspectorDialog({ runId, onClose }: { runId: string; onClose: () => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  const [run, setRun] = useState<InspectedRun | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    const dialog = ref.current;
    if (dialog && !dialog.open) dialog.showModal();
    return () => dialog?.close();
  }, []);
  useEffect(() => {
    let current = true;
    fetchRunSteps(runId).then(
      found => current && setRun(found),
      (failed: Error) => current && setError(failed.message),
    );
    return () => {
      current = false;
    };
  }, [runId]);
  const usage = run?.usage ?? {};
  return (
    <dialog ref={ref} className="preview inspector" data-testid="run-inspector" onClose={onClose}>
      <div className="preview-head">
        <span className="preview-title">Run {runId}</span>
        <button type="button" className="icon-button" aria-label="Close" onClick={onClose} style={{ marginLeft: 'auto' }}>
          <Icon name="x" />
        </button>
      </div>
      <div className="preview-body">
        {error && <p role="alert">{error}</p>}
        {!run && !error && <p className="muted">Loading…</p>}
        {run && (
          <>
            <p className="inspect-summary" data-testid="inspect-summary">
              <span className="badge">{run.status}</span> {run.agent ?? 'agent'} · {run.provider}:{run.model} ·{' '}
              {run.steps.length} {run.steps.length === 1 ? 'step' : 'steps'} · {usage.inputTokens ?? '—'} in /{' '}
              {usage.outputTokens ?? '—'} out tokens
              {run.endedAt !== null && ` · ${formatDuration(run.endedAt - run.startedAt)}`}
              {run.traceId && <span className="muted"> · trace {run.traceId}</span>}
            </p>
            {run.parent && (
              <p className="muted" data-testid="inspect-parent">
                A sub-agent: it answers {run.parent.toolName} ({run.parent.toolCallId}) of run {run.parent.runId}
              </p>
            )}
            {run.subAgents.length > 0 && (
              <Section title={`Sub-agents (${run.subAgents.length})`} open>
                <SubAgentTree subAgents={run.subAgents} />
              </Section>
            )}
            {run.steps.map(step => (
              <StepView key={step.stepNumber} step={step} />
            ))}
          </>
        )}
      </div>
    </dialog>
  );
}

/** The "Inspect" action of an assistant message: opens its run in the inspector. */
export function InspectButton({ runId }: { runId: string }) {
  const [open, setOpen] = useState(false);
  return (
    <>
      <button type="button" className="link" onClick={() => setOpen(true)} data-testid="inspect">
        <Icon name="search" /> Inspect
      </button>
      {open && <InspectorDialog runId={runId} onClose={() => setOpen(false)} />}
    </>
  );
}
