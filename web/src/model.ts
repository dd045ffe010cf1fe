// Derived views of a UIMessage: which parts are the execution trace and which the final answer,
// the trace's state (spec 000's state machine), tool calls in one shape, artifacts.
import { getToolName, isToolUIPart, type UIMessage } from 'ai';
import type { ApprovalOverlay } from './approvals';

export type Part = UIMessage['parts'][number];

export interface Metadata {
  runId?: string;
  startedAt?: number;
  completedAt?: number;
  finishReason?: string;
  model?: string;
  provider?: string;
  usage?: { inputTokens?: number; outputTokens?: number; totalTokens?: number };
  error?: { message?: string; code?: string; at?: number };
  abort?: { reason?: string; at?: number };
  closedByEnd?: ClosedMark;
}

/**
 * What a run's end (stopped, interrupted, failed, expired) closed in its message, from the
 * message's `metadata.closedByEnd`: why, and the parts by id (tool call ids; data part ids, such as
 * a budget card's). `byText`: a message stored before the server wrote the mark, whose closed
 * parts are found by the sentences the end wrote into them.
 */
export interface ClosedMark {
  reason?: string;
  toolCallIds: string[];
  dataPartIds: string[];
  byText?: boolean;
}

/**
 * Whether the last assistant message is of a run that has ended (completed, stopped, failed): its
 * end stamps `completedAt`. Its parts the end closed (a question, an approval) read as answered to
 * the SDK's `lastAssistantMessageIsComplete…` checks, but there is no run left to continue.
 */
export function lastRunEnded(messages: UIMessage[]): boolean {
  const last = messages[messages.length - 1];
  if (last?.role !== 'assistant') return false;
  const metadata = last.metadata as Metadata | undefined;
  return typeof metadata?.completedAt === 'number';
}

const NOTHING_CLOSED: ClosedMark = { toolCallIds: [], dataPartIds: [] };

const strings = (value: unknown): string[] => (Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : []);

/** The mark of what the message's run's end closed (nothing, for a run that completed or still works). */
export function closedMarkOf(metadata: unknown): ClosedMark {
  if (!metadata || typeof metadata !== 'object') return NOTHING_CLOSED;
  const m = metadata as Record<string, unknown>;
  const mark = m.closedByEnd;
  if (mark && typeof mark === 'object') {
    const given = mark as Record<string, unknown>;
    return {
      reason: typeof given.reason === 'string' ? given.reason : undefined,
      toolCallIds: strings(given.toolCallIds),
      dataPartIds: strings(given.dataPartIds),
    };
  }
  const endedOpen = m.abort !== undefined || m.error !== undefined || m.status === 'failed' || m.status === 'aborted';
  return endedOpen ? { ...NOTHING_CLOSED, byText: true } : NOTHING_CLOSED;
}

export function metadataOf(message: UIMessage): Metadata {
  const value = message.metadata;
  return value && typeof value === 'object' ? (value as Metadata) : {};
}

/** A tool part (`tool-NAME` or `dynamic-tool`) in one shape (spec 000's toolPartToToolCall). */
export interface ToolCall {
  name: string;
  toolCallId: string;
  state: string;
  title?: string;
  input: unknown;
  output: unknown;
  errorText?: string;
  approval?: { id: string; approved?: boolean; reason?: string; requestReason?: string };
  preliminary?: boolean;
  /** The call's provider metadata (a raised sub-agent approval names its origin there). */
  callProviderMetadata?: unknown;
}

export function toolCallOf(part: Part): ToolCall | null {
  if (!isToolUIPart(part)) return null;
  const p = part as unknown as Record<string, unknown>;
  return {
    name: getToolName(part),
    toolCallId: part.toolCallId,
    state: part.state,
    title: typeof p.title === 'string' ? p.title : undefined,
    input: p.input,
    output: p.output,
    errorText: typeof p.errorText === 'string' ? p.errorText : undefined,
    approval: p.approval as ToolCall['approval'],
    preliminary: p.preliminary === true,
    callProviderMetadata: p.callProviderMetadata,
  };
}

export const QUESTION_TOOL = 'ask_user_question';
export const EXPIRED_REASON = 'approval expired';
/** How the reason of an approval the run's end closed undecided ends, in a message stored before the mark. */
const UNDECIDED_SUFFIX = ' before a decision';
/** How the error of a tool part the run's end closed ends, in a message stored before the mark. */
const CLOSED_SUFFIXES = [' before the tool reported a result', ' before the question was answered', ' before the approved tool ran'];

/**
 * A part the run's end closed (stopped, interrupted, failed) before it had an outcome of its own: a
 * cut tool call, an unanswered question, an undecided approval, an approved tool that never ran.
 * Nothing failed or was denied. Read from the message's mark (`closedMarkOf`).
 */
export function closedByEnd(tool: ToolCall, mark: ClosedMark): boolean {
  if (!mark.byText) return (tool.state === 'output-error' || tool.state === 'output-denied') && mark.toolCallIds.includes(tool.toolCallId);
  if (tool.state === 'output-error') return CLOSED_SUFFIXES.some(suffix => tool.errorText?.endsWith(suffix) ?? false);
  return tool.state === 'output-denied' && (tool.approval?.reason?.endsWith(UNDECIDED_SUFFIX) ?? false);
}

/** A part the trace shows (anything but text and step boundaries). */
export function isProcessPart(part: Part): boolean {
  return part.type !== 'text' && part.type !== 'step-start';
}

export interface Layout {
  /** Parts of the execution trace, in order, with their index in `parts`. */
  trace: { part: Part; index: number }[];
  /** The final answer: the text after the last process part. */
  answer: { part: Part; index: number }[];
}

export function layoutOf(message: UIMessage): Layout {
  let lastProcess = -1;
  message.parts.forEach((part, index) => {
    if (isProcessPart(part)) lastProcess = index;
  });
  const trace: Layout['trace'] = [];
  const answer: Layout['answer'] = [];
  message.parts.forEach((part, index) => {
    if (part.type === 'step-start') return;
    if (index <= lastProcess) trace.push({ part, index });
    else if (part.type === 'text') answer.push({ part, index });
    else trace.push({ part, index });
  });
  return { trace, answer };
}

export type TraceState = 'running' | 'waiting' | 'incomplete' | 'error' | 'complete';

export interface TraceFacts {
  state: TraceState;
  /** Why a trace is incomplete, for its label. */
  incompleteReason?: 'stopped' | 'moved-on' | 'interrupted' | 'connection';
  pendingApprovals: string[];
  liveQuestion: ToolCall | null;
  ended: boolean;
}

export interface MessageContext {
  /** A user message follows this one. */
  laterUserMessage: boolean;
  /** This message is the one the chat is streaming now. */
  streaming: boolean;
  /** The server says the message's run is active (from the conversation list). */
  serverActive: boolean;
  /** The chat lost its connection while this message was the latest. */
  connectionLost: boolean;
  storedStatus?: string;
  overlays: Map<string, ApprovalOverlay>;
}

export function traceFacts(message: UIMessage, context: MessageContext): TraceFacts {
  const metadata = metadataOf(message);
  const ended = metadata.completedAt !== undefined || metadata.abort !== undefined || metadata.error !== undefined;
  const tools = message.parts.map(toolCallOf).filter((t): t is ToolCall => t !== null);
  const pendingApprovals = tools
    .filter(t => t.state === 'approval-requested' && t.approval)
    .map(t => t.approval!.id)
    .filter(id => {
      const phase = context.overlays.get(id)?.phase;
      return phase === undefined || phase === 'failed' || phase === 'submitting';
    });
  const question = tools.find(t => t.name === QUESTION_TOOL && t.state === 'input-available') ?? null;
  const unanswered = pendingApprovals.length > 0 || question !== null;
  const base = { pendingApprovals, liveQuestion: null as ToolCall | null, ended };

  if (metadata.error !== undefined && metadata.finishReason !== 'stop') return { ...base, state: 'error' };
  if (metadata.abort !== undefined) {
    const reason = metadata.abort.reason === 'new_user_message' ? 'moved-on' : 'stopped';
    return { ...base, state: 'incomplete', incompleteReason: reason };
  }
  if (unanswered && context.laterUserMessage) return { ...base, state: 'incomplete', incompleteReason: 'moved-on' };
  if (unanswered && !ended) return { ...base, state: 'waiting', liveQuestion: question };
  if (context.streaming) return { ...base, state: 'running' };
  if (!ended) {
    if (context.connectionLost) return { ...base, state: 'incomplete', incompleteReason: 'connection' };
    if (context.serverActive) return { ...base, state: 'running' };
    return { ...base, state: 'incomplete', incompleteReason: 'interrupted' };
  }
  return { ...base, state: 'complete' };
}

export interface Artifact {
  key: string;
  title: string;
  url: string;
  mediaType?: string;
  toolCallId?: string;
}

/** Message-level artifacts: save_artifact results and file parts, deduplicated (by id / URL / path). */
export function artifactsOf(message: UIMessage): Artifact[] {
  const seen = new Map<string, Artifact>();
  for (const part of message.parts) {
    const tool = toolCallOf(part);
    if (tool && tool.state === 'output-available' && tool.output && typeof tool.output === 'object') {
      const out = tool.output as Record<string, unknown>;
      if (typeof out.url === 'string' && (typeof out.artifactId === 'string' || tool.name === 'save_artifact')) {
        const key = typeof out.artifactId === 'string' ? out.artifactId : out.url;
        if (!seen.has(key)) {
          seen.set(key, {
            key,
            title: typeof out.title === 'string' ? out.title : out.url,
            url: out.url,
            mediaType: typeof out.mediaType === 'string' ? out.mediaType : undefined,
            toolCallId: tool.toolCallId,
          });
        }
      }
    } else if (part.type === 'file') {
      const key = part.url;
      if (!seen.has(key)) {
        seen.set(key, { key, title: part.filename ?? part.mediaType, url: part.url, mediaType: part.mediaType });
      }
    }
  }
  return [...seen.values()];
}

/** What identifies a cited page: its URL without the #fragment (spec 000 removes the hash before deduplicating). */
export function sourceKey(url: string): string {
  const hash = url.indexOf('#');
  return hash === -1 ? url : url.slice(0, hash);
}

/** "3.2s", "1m 05s". */
export function formatDuration(ms: number): string {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  const rest = String(seconds % 60).padStart(2, '0');
  if (minutes < 60) return `${minutes}m ${rest}s`;
  return `${Math.floor(minutes / 60)}h ${String(minutes % 60).padStart(2, '0')}m`;
}

/** A tool's name for people: `write_file` → "Write file". Unknown tools keep their raw name. */
export function readableToolName(name: string): string {
  const known: Record<string, string> = {
    list_files: 'List files',
    read_file: 'Read file',
    write_file: 'Write file',
    save_artifact: 'Save artifact',
    ask_user_question: 'Question',
  };
  return known[name] ?? name;
}

export function summarise(value: unknown, max = 80): string {
  if (value === undefined || value === null) return '';
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.length > max ? `${text.slice(0, max - 1)}…` : text;
}
