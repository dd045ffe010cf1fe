// Sub-agent calls in a message: which tool part is an agent-tool call, the child's UIMessage it
// carries (its preliminary outputs while the child works; the child run's stored message once it
// has ended, read from GET /api/runs/{id}), and the state the call's block shows.
import { apiFetch, apiUrl } from './http';
import { QUESTION_TOOL, toolCallOf, type Part, type ToolCall } from './model';

/** What the parent's `metadata.subAgents` says of one call (once the parent has ended). */
export interface SubAgentEntry {
  toolCallId: string;
  agent?: string;
  runId?: string;
  usage?: { inputTokens?: number; outputTokens?: number; totalTokens?: number };
}

/** The child's message as the mirror writes it: `metadata` names its run, agent and start. */
export interface ChildMessage {
  id: string;
  role: 'assistant';
  parts: Part[];
  metadata?: {
    runId?: string;
    agent?: string | null;
    startedAt?: number;
    /** On the child's last step's message: how it ended, and when. */
    status?: 'completed' | 'failed';
    endedAt?: number;
    completedAt?: number;
    usage?: SubAgentEntry['usage'];
    subAgents?: SubAgentEntry[];
  };
}

/** The raised request's origin (`callProviderMetadata.stepline.subAgent` of a `sub-approval-*` part). */
export interface RaisedOrigin {
  runId?: string;
  toolCallId?: string;
  agent?: string;
  agents: string[];
}

export const RAISED_PREFIX = 'sub-approval-';

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A UIMessage-shaped output (`{id, role: 'assistant', parts: [...]}`): a child's message so far. */
export function asChildMessage(output: unknown): ChildMessage | null {
  if (!isRecord(output) || output.role !== 'assistant' || typeof output.id !== 'string' || !Array.isArray(output.parts)) return null;
  const parts = output.parts.filter((p): p is Part => isRecord(p) && typeof p.type === 'string');
  if (parts.length !== output.parts.length) return null;
  return { id: output.id, role: 'assistant', parts, metadata: isRecord(output.metadata) ? (output.metadata as ChildMessage['metadata']) : undefined };
}

/** The entries of a message's `metadata.subAgents` (malformed entries are left out). */
export function subAgentEntries(metadata: unknown): SubAgentEntry[] {
  if (!isRecord(metadata) || !Array.isArray(metadata.subAgents)) return [];
  return metadata.subAgents.filter((e): e is SubAgentEntry => isRecord(e) && typeof e.toolCallId === 'string');
}

/**
 * The last child message seen for each call (by the parent message's id and the call's id): the
 * call's final output is only the child's answer, so the trace keeps what it last showed until the
 * child run's stored message has been read.
 */
const lastSeen = new Map<string, ChildMessage>();

export function remember(scope: string, toolCallId: string, message: ChildMessage): void {
  lastSeen.set(`${scope}\n${toolCallId}`, message);
}

export function remembered(scope: string, toolCallId: string): ChildMessage | undefined {
  return lastSeen.get(`${scope}\n${toolCallId}`);
}

/** A child's message and, inside it, its own sub-agents' messages so far (at any depth), remembered. */
export function rememberTree(scope: string, toolCallId: string, message: ChildMessage, depth = 0): void {
  remember(scope, toolCallId, message);
  if (depth >= 16) return;
  for (const part of message.parts) {
    const tool = toolCallOf(part);
    const inner = tool?.preliminary ? asChildMessage(tool.output) : null;
    if (tool && inner) rememberTree(message.id, tool.toolCallId, inner, depth + 1);
  }
}

/**
 * An SSE event's data as the stream delivers it (before the SDK reduces it, which may fold a
 * preliminary output and the final one into one render): a child's message is remembered under
 * the message being streamed (`messageId`, from the stream's `start`).
 */
export function rememberChunk(data: string, messageId: string | undefined): void {
  if (messageId === undefined || !data.includes('"preliminary":true')) return;
  let chunk: unknown;
  try {
    chunk = JSON.parse(data);
  } catch {
    return;
  }
  if (!isRecord(chunk) || chunk.type !== 'tool-output-available' || chunk.preliminary !== true || typeof chunk.toolCallId !== 'string') return;
  const message = asChildMessage(chunk.output);
  if (message) rememberTree(messageId, chunk.toolCallId, message);
}

/** A tool call is a sub-agent call when its output is a child's message, or the message's metadata (or this page) names it. */
export function isSubAgentCall(tool: ToolCall, entries: SubAgentEntry[], scope: string): boolean {
  if (tool.toolCallId.startsWith(RAISED_PREFIX)) return false;
  return asChildMessage(tool.output) !== null || entries.some(e => e.toolCallId === tool.toolCallId) || remembered(scope, tool.toolCallId) !== undefined;
}

/** Who asks a raised approval: the sub-agent and the agents on the way (null: not a raised part). */
export function raisedOrigin(tool: ToolCall): RaisedOrigin | null {
  if (!tool.toolCallId.startsWith(RAISED_PREFIX)) return null;
  const meta = isRecord(tool.callProviderMetadata) ? tool.callProviderMetadata : {};
  const stepline = isRecord(meta.stepline) ? meta.stepline : {};
  const origin = isRecord(stepline.subAgent) ? stepline.subAgent : {};
  return {
    runId: typeof origin.runId === 'string' ? origin.runId : undefined,
    toolCallId: typeof origin.toolCallId === 'string' ? origin.toolCallId : undefined,
    agent: typeof origin.agent === 'string' ? origin.agent : undefined,
    agents: Array.isArray(origin.agents) ? origin.agents.filter((a): a is string => typeof a === 'string') : [],
  };
}

export type SubAgentState = 'running' | 'approval' | 'question' | 'done' | 'failed' | 'not-completed';

/** Whether a child message (or one of its own sub-agents, at any depth) waits for an approval or an answer. */
function waitOf(message: ChildMessage, depth = 0): 'approval' | 'question' | null {
  let found: 'approval' | 'question' | null = null;
  for (const part of message.parts) {
    const tool = toolCallOf(part);
    if (!tool) continue;
    if (tool.state === 'approval-requested') return 'approval';
    if (tool.name === QUESTION_TOOL && tool.state === 'input-available') found = 'question';
    const child = depth < 16 && tool.preliminary ? asChildMessage(tool.output) : null;
    const inner = child ? waitOf(child, depth + 1) : null;
    if (inner === 'approval') return inner;
    found ??= inner;
  }
  return found;
}

/** The state a sub-agent call's block shows: the tool part's, refined by the child's message while it works. */
export function subAgentState(tool: ToolCall, child: ChildMessage | undefined, readOnly: boolean): SubAgentState {
  if (tool.state === 'output-error' || tool.state === 'output-denied') return 'failed';
  if (tool.state === 'output-available' && !tool.preliminary) return 'done';
  if (child?.metadata?.status === 'completed') return 'done'; // ended; the parent waits for its other calls
  if (child?.metadata?.status === 'failed') return 'failed';
  if (readOnly) return 'not-completed';
  const wait = child ? waitOf(child) : null;
  return wait ?? 'running';
}

export const SUB_AGENT_LABELS: Record<SubAgentState, { label: string; tone: string }> = {
  running: { label: 'running', tone: 'active' },
  approval: { label: 'waiting for approval', tone: 'wait' },
  question: { label: 'waiting for you', tone: 'wait' },
  done: { label: 'done', tone: 'ok' },
  failed: { label: 'failed', tone: 'bad' },
  'not-completed': { label: 'not completed', tone: 'muted' },
};

/** An ended child run as GET /api/runs/{id} reports it (the fields the block reads). */
export interface ChildRun {
  runId: string;
  agent: string | null;
  status: string;
  startedAt: number;
  endedAt: number | null;
  usage: { totalTokens?: number } | null;
  message: { id: string; parts: Part[]; metadata: Record<string, unknown> | null } | null;
}

const runs = new Map<string, Promise<ChildRun | null>>();

/**
 * An ended child run, read once per page (an ended run does not change); null when it cannot be
 * read (the block then keeps the child's message it last saw). A failed read is tried again later.
 */
export function readChildRun(runId: string): Promise<ChildRun | null> {
  let pending = runs.get(runId);
  if (!pending) {
    pending = apiFetch(apiUrl(`/api/runs/${encodeURIComponent(runId)}`))
      .then(async response => (response.ok ? ((await response.json()) as ChildRun) : null))
      .catch(() => null)
      .then(run => {
        if (run?.message === null || run === null) runs.delete(runId);
        return run;
      });
    runs.set(runId, pending);
  }
  return pending;
}

/** The child's stored message as the block renders it (its metadata carries its own sub-agents). */
export function storedChildMessage(run: ChildRun): ChildMessage | null {
  if (!run.message) return null;
  return asChildMessage({ id: run.message.id, role: 'assistant', parts: run.message.parts, metadata: run.message.metadata ?? undefined });
}

/**
 * The messages with the raised requests left out of the last one: for the check that sends a
 * client's tool outputs (`lastAssistantMessageIsCompleteWithToolCalls`). A raised request the
 * server settled (decided through the webhook while a stream was open) is no output of this
 * client's, and its step has nothing to continue: sending it would only be refused.
 */
export function withoutRaised<M extends { parts: unknown[] }>(messages: M[]): M[] {
  const last = messages.at(-1);
  if (!last) return messages;
  const parts = last.parts.filter(p => !(isRecord(p) && typeof p.toolCallId === 'string' && p.toolCallId.startsWith(RAISED_PREFIX)));
  return parts.length === last.parts.length ? messages : [...messages.slice(0, -1), { ...last, parts }];
}
