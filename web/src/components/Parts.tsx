// The blocks of the execution trace, one per part, chosen by part type and tool (spec 000's table):
// ThinkingBlock, WebSearchBlock, CodeInterpreterBlock, ToolCallBlock (the generic fallback) with
// dedicated bodies for the default tools, ToolApprovalCard, QuestionCard, SourceList, FileCard and
// ProcessPartFallback.
import { useState, type ReactNode } from 'react';
import {
  EXPIRED_REASON,
  QUESTION_TOOL,
  readableToolName,
  sourceKey,
  summarise,
  toolCallOf,
  type Part,
  type ToolCall,
} from '../model';
import type { ChatSession } from '../session';
import { ToolArguments } from './Arguments';
import { CodeInterpreterBlock, isCodeTool } from './CodeInterpreterBlock';
import { PreviewLink } from './FilePreview';
import { useImageUrl } from './fileUrl';
import { Icon, Spinner } from './Icon';
import { Markdown } from './Markdown';
import { WEB_SEARCH_TOOL, WebSearchBlock } from './WebSearchBlock';

export interface PartContext {
  session: ChatSession;
  /** Incomplete or superseded turn: cards are read-only. */
  readOnly: boolean;
  /** The run was stopped (aborted) before it finished: what was still open ends here. */
  stopped: boolean;
  /** The trace is live (running or waiting). */
  live: boolean;
}

// -- reasoning ----------------------------------------------------------------------------------------

export function ThinkingBlock({ part, live }: { part: Extract<Part, { type: 'reasoning' }>; live: boolean }) {
  const streaming = live && part.state === 'streaming';
  return (
    <details className="block thinking" data-testid="thinking-block">
      <summary>
        <Icon name="brain" />
        <span className="block-title">{streaming ? 'Thinking…' : 'Thinking'}</span>
        <span className="block-summary">{summarise(part.text, 90)}</span>
      </summary>
      <div className="block-body">
        <Markdown text={part.text} />
      </div>
    </details>
  );
}

// -- tools ------------------------------------------------------------------------------------------

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

function Json({ value }: { value: unknown }) {
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

type SourceUrl = Extract<Part, { type: 'source-url' }>;

/** A dedicated block (web search, code interpreter) with the approval card a tool may carry. */
function DedicatedToolBlock({ tool, ctx, sources }: { tool: ToolCall; ctx: PartContext; sources: SourceUrl[] }) {
  const base = toolStatus(tool, ctx);
  const status = { ...base, spin: base.tone === 'active' && !ctx.readOnly && ctx.live };
  return (
    <>
      {tool.name === WEB_SEARCH_TOOL ? (
        <WebSearchBlock tool={tool} sources={sources} status={status} />
      ) : (
        <CodeInterpreterBlock tool={tool} status={status} />
      )}
      {tool.approval && <ToolApprovalCard tool={tool} ctx={ctx} />}
    </>
  );
}

export function ToolCallBlock({ tool, ctx }: { tool: ToolCall; ctx: PartContext }) {
  if (tool.name === QUESTION_TOOL) return <QuestionCard tool={tool} ctx={ctx} />;
  if (tool.name === WEB_SEARCH_TOOL || isCodeTool(tool.name)) return <DedicatedToolBlock tool={tool} ctx={ctx} sources={[]} />;
  const status = toolStatus(tool, ctx);
  const known = tool.name in TOOL_ICONS;
  const output = tool.output as Record<string, unknown> | undefined;
  const artifact =
    tool.name === 'save_artifact' && tool.state === 'output-available' && output && typeof output.url === 'string'
      ? output
      : null;
  return (
    <div
      className={`block tool tone-${status.tone}`}
      id={`tool-${tool.toolCallId}`}
      data-testid="tool-block"
      data-tool-name={tool.name}
      data-tool-state={tool.state}
      data-tool-call-id={tool.toolCallId}
    >
      <details>
        <summary>
          <Icon name={TOOL_ICONS[tool.name] ?? 'terminal'} />
          <span className="block-title">{tool.title ?? (known ? readableToolName(tool.name) : tool.name)}</span>
          <span className="block-summary">{inputSummary(tool)}</span>
          <span className={`badge tone-${status.tone}`} data-testid="tool-status">
            {status.tone === 'active' && !ctx.readOnly && ctx.live ? <Spinner /> : null}
            {status.label}
          </span>
        </summary>
        <div className="block-body">
          <ToolDetails tool={tool} />
        </div>
      </details>
      {tool.state === 'output-error' && tool.errorText && (
        <div className="tool-error" data-testid="tool-error">
          <Icon name="alert" /> {tool.errorText}
        </div>
      )}
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
      {tool.approval && <ToolApprovalCard tool={tool} ctx={ctx} />}
    </div>
  );
}

// -- approvals --------------------------------------------------------------------------------------

type ApprovalView =
  | 'requested'
  | 'submitting'
  | 'approved'
  | 'denied'
  | 'expired'
  | 'conflict'
  | 'not-found'
  | 'not-answered';

function approvalView(tool: ToolCall, ctx: PartContext): { view: ApprovalView; reason?: string; pending: boolean } {
  const approval = tool.approval!;
  const overlay = ctx.session.overlays.get(approval.id);
  const deniedByServer = tool.state === 'output-denied' || (tool.state === 'approval-responded' && approval.approved === false);
  if (deniedByServer) {
    return approval.reason === EXPIRED_REASON
      ? { view: 'expired', pending: false }
      : { view: 'denied', reason: approval.reason, pending: false };
  }
  if (overlay && (overlay.phase === 'expired' || overlay.phase === 'conflict' || overlay.phase === 'not-found')) {
    // The server refused this page's decision (the continuation or the webhook answered 410/409/404):
    // that, not the decision the page applied locally, is what the card says.
    return { view: overlay.phase, pending: false };
  }
  if (tool.state !== 'approval-requested') {
    // approval-responded (approved), or the tool ran: approved. Sending is shown until the server took it.
    return { view: 'approved', reason: approval.reason, pending: overlay?.phase === 'submitting' };
  }
  if (overlay?.phase === 'accepted') return { view: overlay.approved ? 'approved' : 'denied', reason: overlay.reason, pending: true };
  if (overlay?.phase === 'submitting') return { view: 'submitting', pending: true };
  if (ctx.readOnly) return { view: 'not-answered', pending: false };
  return { view: 'requested', pending: false };
}

const APPROVAL_LABELS: Record<ApprovalView, string> = {
  requested: 'Approval needed',
  submitting: 'Sending your decision…',
  approved: 'Approved',
  denied: 'Denied',
  expired: 'Expired: no decision in time, the run went on without it',
  conflict: 'Already decided the other way',
  'not-found': 'This approval no longer exists',
  'not-answered': 'Not answered',
};

export function ToolApprovalCard({ tool, ctx }: { tool: ToolCall; ctx: PartContext }) {
  const approval = tool.approval!;
  const [reason, setReasonState] = useState(() => ctx.session.reasonDrafts.get(approval.id) ?? '');
  const setReason = (value: string) => {
    ctx.session.reasonDrafts.set(approval.id, value);
    setReasonState(value);
  };
  const { view, reason: decidedReason, pending } = approvalView(tool, ctx);
  const overlay = ctx.session.overlays.get(approval.id);
  const actionable = view === 'requested';
  const submit = (approved: boolean) => {
    void ctx.session.decide(approval.id, approved, reason.trim() || undefined);
  };
  return (
    <div className={`approval view-${view}`} data-testid="approval-card" data-approval-state={view} data-approval-id={approval.id}>
      <div className="approval-head">
        <Icon name="shield" />
        <span>{APPROVAL_LABELS[view]}</span>
        {pending && view !== 'submitting' && <span className="muted"> · continuing…</span>}
      </div>
      {approval.requestReason && <p className="muted">{approval.requestReason}</p>}
      <ToolArguments input={tool.input} />
      {decidedReason && (view === 'denied' || view === 'approved') && <p className="approval-reason">“{decidedReason}”</p>}
      {overlay?.phase === 'failed' && actionable && (
        <p className="approval-failed" data-testid="approval-failed">
          {(overlay.message ?? 'The decision did not reach the server').replace(/[;.\s]*try again\.?$/i, '')}; try again.
        </p>
      )}
      {overlay?.message && (view === 'conflict' || view === 'not-found' || view === 'expired') && (
        <p className="muted">{overlay.message}</p>
      )}
      {(actionable || view === 'submitting') && (
        <div className="approval-actions">
          <input
            type="text"
            placeholder="Reason (optional)"
            value={reason}
            disabled={!actionable}
            onChange={e => setReason(e.target.value)}
            aria-label="Reason"
          />
          <button type="button" className="primary" disabled={!actionable} onClick={() => submit(true)}>
            Approve
          </button>
          <button type="button" disabled={!actionable} onClick={() => submit(false)}>
            Deny
          </button>
        </div>
      )}
    </div>
  );
}

// -- questions --------------------------------------------------------------------------------------

export function questionOf(tool: ToolCall): { question: string; options: string[] } {
  const input = (tool.input ?? {}) as Record<string, unknown>;
  return {
    question: typeof input.question === 'string' ? input.question : '',
    options: Array.isArray(input.options) ? input.options.map(String) : [],
  };
}

function answerText(output: unknown): string {
  if (output && typeof output === 'object' && 'answer' in output) return String((output as { answer: unknown }).answer);
  return summarise(output, 200);
}

export function QuestionCard({ tool, ctx }: { tool: ToolCall; ctx: PartContext }) {
  const { question, options } = questionOf(tool);
  let state: string;
  let body: ReactNode = null;
  if (tool.state === 'output-available') {
    state = 'answered';
    body = <p className="answer">Answer: {answerText(tool.output)}</p>;
  } else if (tool.state === 'output-error') {
    const expired = /timeout|expired/i.test(tool.errorText ?? '');
    state = expired ? 'expired' : 'cancelled';
    body = <p className="muted">{expired ? 'Expired: no answer in time.' : `Cancelled (${tool.errorText ?? 'no answer'}).`}</p>;
  } else if (ctx.readOnly && ctx.stopped) {
    state = 'aborted';
    body = <p className="muted">Stopped before it was answered.</p>;
  } else if (ctx.readOnly) {
    state = 'not-answered';
    body = <p className="muted">Not answered.</p>;
  } else {
    state = 'waiting';
    body = <p className="muted">Waiting for your answer: answer in the box below.</p>;
  }
  return (
    <div className="block question" id={`tool-${tool.toolCallId}`} data-testid="question-card" data-question-state={state} data-tool-state={tool.state}>
      <div className="question-head">
        <Icon name="question" />
        <span className="block-title">{question || 'Question'}</span>
      </div>
      {options.length > 0 && (
        <ul className="options">
          {options.map(o => (
            <li key={o}>{o}</li>
          ))}
        </ul>
      )}
      {body}
    </div>
  );
}

// -- sources, files, the fallback -------------------------------------------------------------------

type SourcePart = Extract<Part, { type: 'source-url' }> | Extract<Part, { type: 'source-document' }>;

/** The sources not listed yet (`listed` holds the keys of the message's earlier lists, and grows). */
function unlisted(parts: SourcePart[], listed: Set<string>): SourcePart[] {
  return parts.filter(p => {
    const key = p.type === 'source-url' ? sourceKey(p.url) : `doc:${p.sourceId}:${p.title}`;
    if (listed.has(key)) return false;
    listed.add(key);
    return true;
  });
}

export function SourceList({ parts: unique }: { parts: SourcePart[] }) {
  return (
    <div className="block sources" data-testid="source-list">
      <div className="block-head">
        <Icon name="link" /> <span className="block-title">Sources</span>
        <span className="block-summary">{unique.length}</span>
      </div>
      <ul>
        {unique.map(p =>
          p.type === 'source-url' ? (
            <li key={p.url}>
              <a href={p.url} target="_blank" rel="noopener noreferrer">
                {p.title ?? p.url}
              </a>
              {p.title && <span className="url">{p.url}</span>}
            </li>
          ) : (
            <li key={`${p.sourceId}:${p.title}`}>
              <Icon name="file" /> {p.title} <span className="muted">({p.filename ?? p.mediaType})</span>
            </li>
          ),
        )}
      </ul>
    </div>
  );
}

/** An image file's thumbnail (fetched with the token when its URL is the API's). */
function Thumbnail({ url, alt }: { url: string; alt: string }) {
  const src = useImageUrl(url);
  return src ? <img src={src} alt={alt} /> : <Icon name="image" />;
}

export function FileCard({ url, mediaType, filename }: { url: string; mediaType: string; filename?: string }) {
  const image = mediaType.startsWith('image/') && (url.startsWith('data:') || url.startsWith('/'));
  const file = { url, mediaType, filename, title: filename ?? mediaType };
  return (
    <div className="block file-card" data-testid="file-card" data-media-type={mediaType}>
      <PreviewLink file={file} testId="file-open">
        {image ? <Thumbnail url={url} alt={filename ?? 'image'} /> : <Icon name="file" />}
        <span>{filename ?? mediaType}</span>
      </PreviewLink>
    </div>
  );
}

export function ProcessPartFallback({ part }: { part: Part }) {
  const record = part as unknown as Record<string, unknown>;
  const kind = typeof record.kind === 'string' ? record.kind : undefined;
  if (part.type === 'data-retry') {
    const data = (record.data ?? {}) as { reason?: string; attempt?: number };
    return (
      <div className="block retry" data-testid="retry-notice">
        <Icon name="refresh" /> Model call failed ({data.reason ?? 'error'}); retrying, attempt {String(data.attempt ?? '?')}
      </div>
    );
  }
  const { type: _type, ...rest } = record;
  return (
    <details className="block fallback" data-testid="part-fallback" data-part-type={part.type}>
      <summary>
        <Icon name="puzzle" />
        <span className="block-title">{part.type}</span>
        {kind && <span className="block-summary">{kind}</span>}
      </summary>
      <div className="block-body">
        <Json value={rest} />
      </div>
    </details>
  );
}

/**
 * The parts of the trace, strictly in order; consecutive sources are one list, and a page a list
 * of this message has already shown is not listed again (by URL, without its #fragment).
 */
export function renderTraceParts(parts: { part: Part; index: number }[], ctx: PartContext, wrap: (key: string, node: ReactNode, part: Part) => ReactNode) {
  const out: ReactNode[] = [];
  const listed = new Set<string>();
  for (let i = 0; i < parts.length; i++) {
    const { part, index } = parts[i];
    const key = `p${index}`;
    if (part.type === 'source-url' || part.type === 'source-document') {
      const group: SourcePart[] = [];
      while (i < parts.length && (parts[i].part.type === 'source-url' || parts[i].part.type === 'source-document')) {
        group.push(parts[i].part as SourcePart);
        i++;
      }
      i--;
      const unique = unlisted(group, listed);
      if (unique.length > 0) out.push(wrap(key, <SourceList parts={unique} />, part));
      continue;
    }
    const tool = toolCallOf(part);
    if (tool && (tool.name === WEB_SEARCH_TOOL || isCodeTool(tool.name))) {
      // A search's result is also the source-url parts right after it: they are its URLs, not a list of their own.
      const sources: SourceUrl[] = [];
      while (tool.name === WEB_SEARCH_TOOL && i + 1 < parts.length && parts[i + 1].part.type === 'source-url') {
        sources.push(parts[i + 1].part as SourceUrl);
        i++;
      }
      out.push(wrap(key, <DedicatedToolBlock tool={tool} ctx={ctx} sources={sources} />, part));
    } else if (tool) {
      out.push(wrap(key, <ToolCallBlock tool={tool} ctx={ctx} />, part));
    } else if (part.type === 'reasoning') {
      out.push(wrap(key, <ThinkingBlock part={part} live={ctx.live} />, part));
    } else if (part.type === 'text') {
      out.push(wrap(key, <div className="process-text"><Markdown text={part.text} /></div>, part));
    } else if (part.type === 'file' || part.type === 'reasoning-file') {
      const file = part as { url: string; mediaType: string; filename?: string };
      out.push(wrap(key, <FileCard url={file.url} mediaType={file.mediaType} filename={file.filename} />, part));
    } else {
      out.push(wrap(key, <ProcessPartFallback part={part} />, part));
    }
  }
  return out;
}
