// The run inspector's data: GET /api/runs/{id}/steps (owner-only), as stepline.runtime.inspection builds it.
import { apiFetch, apiUrl } from './http';

export interface InspectedTiming {
  queuedAt: number | null;
  startedAt: number | null;
  endedAt: number | null;
  queuedMs: number | null;
  timeToFirstTokenMs: number | null;
  durationMs: number | null;
}

/** A child run of an agent-tool call, with its own children (the sub-agent tree). */
export interface InspectedSubAgent {
  toolCallId: string;
  toolName: string;
  runId: string;
  agent: string | null;
  status: string;
  finishReason: string | null;
  usage: Record<string, number> | null;
  startedAt: number;
  endedAt: number | null;
  subAgents: InspectedSubAgent[];
}

export interface InspectedTool {
  toolCallId: string;
  toolName: string;
  status: string;
  input: unknown;
  output: unknown;
  error: { message?: string } | null;
  durationMs: number | null;
  approval: {
    approvalId: string;
    status: string;
    decision: 'approved' | 'denied' | null;
    decidedBy: string | null;
    reason: string | null;
    decidedAt: number | null;
  } | null;
  subAgent: InspectedSubAgent | null;
}

export interface InspectedRequest {
  provider: string;
  model: string;
  instructions: Array<{ role: string; content: unknown }>;
  messages: Array<{ role: string; content: unknown }> | null;
  tools: Array<{ type: string; name: string; description?: string; inputSchema?: unknown; args?: unknown }>;
  settings: Record<string, unknown>;
  toolChoice?: unknown;
  providerOptions?: Record<string, unknown>;
  headers?: Record<string, string>;
}

export interface InspectedStep {
  stepNumber: number;
  status: string;
  finishReason: string | null;
  usage: Record<string, number> | null;
  request: InspectedRequest | null;
  response: {
    text: string;
    reasoning?: string;
    toolCalls: Array<{ toolCallId: string; toolName: string; input: unknown }>;
    finishReason: string;
  } | null;
  retries: Array<{ attempt: number; reason: string | null; error: string | null }>;
  timings: InspectedTiming;
  cost: number | null;
  tools: InspectedTool[];
}

export interface InspectedRun {
  runId: string;
  agent: string | null;
  provider: string;
  model: string;
  status: string;
  finishReason: string | null;
  usage: Record<string, number> | null;
  startedAt: number;
  endedAt: number | null;
  traceId: string | null;
  steps: InspectedStep[];
  /** On a sub-agent's run: the parent run and the tool call it answers. */
  parent: { runId: string; toolCallId: string; toolName: string; depth: number } | null;
  subAgents: InspectedSubAgent[];
}

export async function fetchRunSteps(runId: string): Promise<InspectedRun> {
  const response = await apiFetch(apiUrl(`/api/runs/${encodeURIComponent(runId)}/steps`));
  if (!response.ok) throw new Error(`the run could not be read (${response.status})`);
  return (await response.json()) as InspectedRun;
}
