// Front-end telemetry: render, subscriber and other UI errors go to the console with the ids that
// locate them (spec 000: runId, messageId, lastEventType, lastEventSeq, approvalId, toolCallId,
// component stack). Never user text, tool input or tokens. Never written into a message.

import { Unreachable } from './http';

export interface UiErrorContext {
  conversationId?: string;
  runId?: string;
  messageId?: string;
  lastEventType?: string;
  lastEventSeq?: string;
  approvalId?: string;
  toolCallId?: string;
  componentStack?: string;
}

export type UiErrorKind = 'render' | 'subscriber' | 'scroll' | 'refresh' | 'network' | 'stream' | 'approval' | 'usage';

/** An API request that got no response at all (http.ts's `Unreachable`): the server down or the link cut. */
function isUnreachable(error: unknown): boolean {
  return error instanceof Unreachable;
}

/**
 * Log a UI error. A request that never reached the server is a `network` error whichever view made it
 * (the view goes into `during`), so a restart reads the same in every part of the page.
 */
export function logUiError(kind: UiErrorKind, error: unknown, context: UiErrorContext): void {
  const detail = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  const fields: Record<string, string> = Object.fromEntries(
    Object.entries(context).filter((entry): entry is [string, string] => entry[1] !== undefined && entry[1] !== ''),
  );
  const shown = isUnreachable(error) ? 'network' : kind;
  if (shown !== kind) fields.during = kind;
  console.error(`[stepline-ui] ${shown} error: ${detail}`, JSON.stringify(fields));
}
