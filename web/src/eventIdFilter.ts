// The SSE events of one response, passed through unchanged except an event whose `id:`
// (`{seq}.{index}`, increasing within one response) is not after the last one seen: the same events
// delivered twice never append a delta twice. It reads only the framing (`id:` lines, blank-line
// separated events, `[DONE]`); the SDK parses the events. `recordedFetch` is the transport's
// `fetch`: it records each request (did it reach the server, its status, did its stream end with
// `[DONE]`) and puts the filter on each SSE body.
import { apiFetch } from './http';

/** What the transport's watching fetch records of one request. */
export interface RequestRecord {
  method: string;
  status?: number;
  reachedServer: boolean;
  networkError?: string;
  done: boolean;
  endedWithoutDone: boolean;
}

/** Where the filter reports what passed (for the logs) and what it dropped. */
export interface EventSink {
  duplicatesDropped: number;
  noteEvent(id: string | undefined, data: string | undefined): void;
}

function position(id: string): [number, number] | null {
  const match = /^(\d+)(?:\.(\d+))?$/.exec(id.trim());
  if (!match) return null;
  return [Number(match[1]), match[2] === undefined ? Number.MAX_SAFE_INTEGER : Number(match[2])];
}

function after(a: [number, number], b: [number, number]): boolean {
  return a[0] > b[0] || (a[0] === b[0] && a[1] > b[1]);
}

/**
 * Passes SSE events through unchanged, except an event whose `id:` is not after the last id seen in
 * this response (the same event delivered again). It reads only the framing (`id:` lines, blank-line
 * separated events, `[DONE]`); the SDK parses the events.
 */
export function eventIdFilter(session: EventSink, record: RequestRecord): TransformStream<string, string> {
  let buffer = '';
  let last: [number, number] | null = null;
  const pass = (block: string, controller: TransformStreamDefaultController<string>) => {
    let id: string | undefined;
    let data: string | undefined;
    for (const line of block.split('\n')) {
      if (line.startsWith('id:')) id = line.slice(3).trim();
      else if (line.startsWith('data:')) data = line.slice(5).trim();
    }
    if (data === '[DONE]') record.done = true;
    const here = id === undefined ? null : position(id);
    if (here !== null) {
      if (last !== null && !after(here, last)) {
        session.duplicatesDropped += 1;
        return;
      }
      last = here;
    }
    session.noteEvent(id, data);
    controller.enqueue(block + '\n\n');
  };
  return new TransformStream<string, string>({
    transform(text, controller) {
      buffer += text.includes('\r') ? text.replace(/\r\n?/g, '\n') : text;
      const blocks = buffer.split('\n\n');
      buffer = blocks.pop() ?? '';
      for (const block of blocks) if (block.length > 0) pass(block, controller);
    },
    flush(controller) {
      if (buffer.trim().length > 0) pass(buffer, controller);
      if (!record.done) record.endedWithoutDone = true;
    },
  });
}

/**
 * `apiFetch`, recording the request in `record` (`answered` sees the response first); an SSE body
 * comes back through the event filter.
 */
export async function recordedFetch(
  input: RequestInfo | URL,
  init: RequestInit | undefined,
  record: RequestRecord,
  sink: EventSink,
  answered: (response: Response) => void,
): Promise<Response> {
  let response: Response;
  try {
    response = await apiFetch(input, init); // a 401 renews the token, else signs in again
  } catch (error) {
    record.networkError = String(error);
    throw error;
  }
  record.reachedServer = true;
  record.status = response.status;
  answered(response);
  if (!response.ok || response.body == null || response.status === 204) return response;
  const body = response.body
    .pipeThrough(new TextDecoderStream())
    .pipeThrough(eventIdFilter(sink, record))
    .pipeThrough(new TextEncoderStream());
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}
