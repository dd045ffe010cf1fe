// What every block of the trace is given: the chat's session and the state of the turn it is in.
import type { ClosedMark } from '../model';
import type { ChatSession } from '../session';
import type { SubAgentEntry } from '../subAgents';

export interface PartContext {
  session: ChatSession;
  /** Incomplete or superseded turn: cards are read-only. */
  readOnly: boolean;
  /** The run was stopped (aborted) before it finished: what was still open ends here. */
  stopped: boolean;
  /** The trace is live (running or waiting). */
  live: boolean;
  /** The id of the message these parts belong to (a sub-agent's own message inside a sub-agent block). */
  scope?: string;
  /** That message's `metadata.subAgents`: which calls are sub-agents, their runs and usage. */
  subAgents?: SubAgentEntry[];
  /** How deep in sub-agent blocks (0: the conversation's message). */
  depth?: number;
  /** The run that made the message; with `changeable`, what "Change my answer" forks. */
  runId?: string;
  /** The run has ended and the chat is idle: a decision or an answer can be changed (a fork). */
  changeable: boolean;
  /** What the end of the run that made these parts closed (`metadata.closedByEnd` of their message). */
  closed: ClosedMark;
}
