// A tool call in the trace: the generic ToolCallBlock (readable name, icon, input summary, state,
// expandable input/output, with dedicated bodies for the default tools), the dedicated blocks
// (web search, code interpreter), and the approval card or question card a call carries.
import { EXPIRED_REASON, QUESTION_TOOL, closedByEnd, readableToolName, summarise, type Part, type ToolCall } from '../model';
import { ToolApprovalCard } from './ApprovalCard';
import { CodeInterpreterBlock, isCodeTool } from './CodeInterpreterBlock';
import { PreviewLink } from './FilePreview';
import { Icon, Spinner } from './Icon';
import { ToolError } from './ToolError';
import type { PartContext } from './partContext';
import { QuestionCard } from './QuestionCard';
import { raisedOrigin } from '../subAgents';
import { WEB_SEARCH_TOOL, WebSearchBlock } from './WebSearchBlock';

const TOOL_ICONS: Record<string, string> = {
  list_files: 'folder',
  read_file: 'file',
  write_file: 'pencil',
  save_artifact: 'download',
  ask_user_question: 'question',
};

const REFUSAL_LABELS: Record<string, string> = { conflict: 'decided elsewhere', 'not-found': 'unknown approval', expired: 'expired' };

function toolStatus(tool: ToolCall, ctx: PartContext): { label: string; tone: string } {
  const readOnly = ctx.readOnly;
  // The server refused this page's decision (409/404/410) and its outcome has not come yet: the
  // badge says so, like the card, not what the page applied locally ("approved").
  const refusal = tool.approval ? ctx.session.overlays.get(tool.approval.id)?.phase : undefined;
  if (refusal && refusal in REFUSAL_LABELS && (tool.state === 'approval-requested' || tool.state === 'approval-responded')) {
    return { label: REFUSAL_LABELS[refusal], tone: 'muted' };
  }
  if (closedByEnd(tool, ctx.closed)) return { label: tool.state === 'output-denied' ? 'not approved' : 'not completed', tone: 'muted' };
  const denied = tool.state === 'output-denied' || (tool.state === 'approval-responded' && tool.approval?.approved === false);
  if (denied) return tool.approval?.reason === EXPIRED_REASON ? { label: 'expired', tone: 'muted' } : { label: 'denied', tone: 'muted' };
  switch (tool.state) {
    case 'input-streaming':
      return readOnly ? { label: 'not completed', tone: 'muted' } : { label: 'preparing', tone: 'active' };
    case 'input-available':
      if (readOnly) return { label: 'not completed', tone: 'muted' };
      return tool.name === QUESTION_TOOL ? { label: 'waiting for you', tone: 'wait' } : { label: 'running', tone: 'active' };
    case 'approval-requested':
      return readOnly ? { label: 'not approved', tone: 'muted' } : { label: 'needs approval', tone: 'wait' };
    case 'approval-responded':
      return { label: 'approved', tone: 'active' };
    case 'output-available':
      return tool.preliminary ? { label: 'running', tone: 'active' } : { label: 'done', tone: 'ok' };
    case 'output-error':
      return { label: 'failed', tone: 'bad' };
    default:
      return { label: tool.state, tone: 'muted' };
  }
}

function inputSummary(tool: ToolCall): string {
  const input = (tool.input ?? {}) as Record<string, unknown>;
  switch (tool.name) {
    case 'list_files':
      return typeof input.folder === 'string' && input.folder ? input.folder : 'the whole workspace';
    case 'read_file':
    case 'write_file':
      return typeof input.path === 'string' ? input.path : '';
    case 'save_artifact':
      return typeof input.title === 'string' ? `${input.title} (${String(input.path ?? '')})` : String(input.path ?? '');
    default:
      return summarise(tool.input, 70);
  }
}

export function Json({ value }: { value: unknown }) {
  return <pre className="json">{typeof value === 'string' ? value : JSON.stringify(value, null, 2)}</pre>;
}

function ToolDetails({ tool }: { tool: ToolCall }) {
  const output = tool.output as Record<string, unknown> | undefined;
  const input = (tool.input ?? {}) as Record<string, unknown>;
  if (tool.name === 'list_files' && tool.state === 'output-available' && Array.isArray(output?.files)) {
    const files = output.files as unknown[];
    return files.length === 0 ? (
      <p className="muted">The workspace is empty.</p>
    ) : (
      <ul className="file-list">
        {files.map(f => (
          <li key={String(f)}>
            <Icon name="file" /> {String(f)}
          </li>
        ))}
      </ul>
    );
  }
  if (tool.name === 'read_file' && tool.state === 'output-available' && typeof output?.content === 'string') {
    return <pre className="file-content">{output.content}</pre>;
  }
  if (tool.name === 'write_file' && typeof input.content === 'string') {
    return (
      <>
        <pre className="file-content">{input.content}</pre>
        {tool.state === 'output-available' && output && <p className="muted">Wrote {String(output.bytes)} bytes.</p>}
      </>
    );
  }
  return (
    <>
      <div className="detail-label">Input</div>
      <Json value={tool.input ?? null} />
      {tool.state === 'output-available' && (
        <>
          <div className="detail-label">Output</div>
          <Json value={tool.output ?? null} />
        </>
      )}
    </>
  );
}

export type SourceUrl = Extract<Part, { type: 'source-url' }>;

/** A dedicated block (web search, code interpreter) with the approval card a tool may carry. */
export function DedicatedToolBlock({ tool, ctx, sources }: { tool: ToolCall; ctx: PartContext; sources: SourceUrl[] }) {
  const base = toolStatus(tool, ctx);
  const status = { ...base, spin: base.tone === 'active' && !ctx.readOnly && ctx.live };
  return (
    <>
      {tool.name === WEB_SEARCH_TOOL ? (
        <WebSearchBlock tool={tool} sources={sources} status={status} />
      ) : (
        <CodeInterpreterBlock tool={tool} status={status} />
      )}
      {tool.approval && <ToolApprovalCard tool={tool} ctx={ctx} askedBy={raisedBy(tool)} />}
    </>
  );
}

export function ToolCallBlock({ tool, ctx }: { tool: ToolCall; ctx: PartContext }) {
  if (tool.name === QUESTION_TOOL) return <QuestionCard tool={tool} ctx={ctx} />;
  if (tool.name === WEB_SEARCH_TOOL || isCodeTool(tool.name)) return <DedicatedToolBlock tool={tool} ctx={ctx} sources={[]} />;
  const status = toolStatus(tool, ctx);
  const known = tool.name in TOOL_ICONS;
  const askedBy = raisedBy(tool);
  const nested = (ctx.depth ?? 0) > 0;
  const output = tool.output as Record<string, unknown> | undefined;
  const artifact =
    tool.name === 'save_artifact' && tool.state === 'output-available' && output && typeof output.url === 'string'
      ? output
      : null;
  return (
    <div
      className={`block tool tone-${status.tone}`}
      id={nested ? undefined : `tool-${tool.toolCallId}`}
      data-testid="tool-block"
      data-tool-name={tool.name}
      data-tool-state={tool.state}
      data-tool-call-id={tool.toolCallId}
    >
      <details>
        <summary>
          <Icon name={TOOL_ICONS[tool.name] ?? 'terminal'} />
          <span className="block-title">{tool.title ?? (known ? readableToolName(tool.name) : tool.name)}</span>
          <span className="block-summary">{askedBy ?? inputSummary(tool)}</span>
          <span className={`badge tone-${status.tone}`} data-testid="tool-status">
            {status.tone === 'active' && !ctx.readOnly && ctx.live ? <Spinner /> : null}
            {status.label}
          </span>
        </summary>
        <div className="block-body">
          <ToolDetails tool={tool} />
        </div>
      </details>
      <ToolError tool={tool} />
      {artifact && (
        <PreviewLink
          className="artifact-inline"
          testId="artifact-link"
          file={{
            url: String(artifact.url),
            title: String(artifact.title ?? artifact.url),
            mediaType: typeof artifact.mediaType === 'string' ? artifact.mediaType : undefined,
            filename: typeof artifact.filename === 'string' ? artifact.filename : undefined,
          }}
        >
          <Icon name="download" /> {String(artifact.title ?? artifact.url)}
        </PreviewLink>
      )}
      {tool.approval && <ToolApprovalCard tool={tool} ctx={ctx} askedBy={askedBy} />}
    </div>
  );
}

/** "asked by the writer", "asked by the writer (via the manager)": who raised a sub-agent's approval. */
function raisedBy(tool: ToolCall): string | undefined {
  const origin = raisedOrigin(tool);
  if (!origin) return undefined;
  const via = origin.agents.slice(0, -1);
  const name = origin.agent ?? origin.agents.at(-1) ?? 'a sub-agent';
  return `asked by the ${name}${via.length > 0 ? ` (via the ${via.join(', the ')})` : ''}`;
}
