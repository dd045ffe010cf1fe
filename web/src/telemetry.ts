// Front-end telemetry: render, subscriber and other UI errors go to the console with the ids that
// locate them (spec 000: runId, messageId, lastEventType, lastEventSeq, approvalId, toolCallId,
// component stack). Never user text, tool input or tokens. Never written into a message.

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

export function logUiError(kind: UiErrorKind, error: unknown, context: UiErrorContext): void {
  const detail = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
  const fields = Object.fromEntries(Object.entries(context).filter(([, v]) => v !== undefined && v !== ''));
  console.error(`[stepline-ui] ${kind} error: ${detail}`, JSON.stringify(fields));
}
