// End-to-end client: the real AI SDK Chat (AbstractChat + DefaultChatTransport) against a Stepline server.
// Input: a scenario as JSON (a file named by argv[2], or stdin):
//   {"base": "http://127.0.0.1:8000", "chatId": "c1", "sendAutomaticallyWhen": "approvals" | "toolCalls" | null,
//    "latencyMs": 0 (a pause before each request to the chat API: a slow network),
//    "steps": [{"send": "text"}, {"approve": true, "reason": "ok"}, {"answer": "output"}, {"resume": true},
//              {"webhookDuringResume": {"approved": true}}, {"dropAfterChunks": 5, "send": "text"},
//              {"abortAfterChunks": 5, "send": "text"}, {"regenerate": true}],
//    "body": {...} (DefaultChatTransport's `body` option: extra fields of every chat request, such as `agent`),
//    "messages": [...] (the messages the chat holds at first: a page reloaded from the server's copy)}
// Output (stdout): one JSON object: {messages, statuses, finishes, errors, requests, steps, ...}.
import { readFileSync } from 'node:fs';
import {
  DefaultChatTransport,
  lastAssistantMessageIsCompleteWithApprovalResponses,
  lastAssistantMessageIsCompleteWithToolCalls,
} from 'ai';
import { Chat } from './memory_chat.mjs';

const STEP_TIMEOUT_MS = 20_000;
const scenario = JSON.parse(readFileSync(process.argv[2] ?? 0, 'utf8'));
const plain = value => (value === undefined ? null : JSON.parse(JSON.stringify(value)));
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));

// What the run recorded: every status change, onFinish/onError call, HTTP request and side call.
const log = { statuses: [], finishes: [], errors: [], requests: [], aborts: [], webhooks: [], steps: [] };

// -- fetch: records every request; can cut a response after N SSE events, or abort the run after N ----

let inflight = 0;
let nextResponse = null; // {dropAfter} or {abortAfter} for the next POST /api/chat
const sideCalls = []; // abort requests made from inside a response body, awaited before the report

function sseEvents(text) {
  // Complete SSE events in `text` (separated by a blank line) and the incomplete rest.
  const parts = text.split('\n\n');
  return { events: parts.slice(0, -1), rest: parts.at(-1) };
}

// The response with its body passed through event by event: counted in flight until the body ends,
// fails or is cancelled; cut after `dropAfter` data events; the run aborted after `abortAfter`.
function watchBody(response, { dropAfter, abortAfter } = {}) {
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  const encoder = new TextEncoder();
  let buffer = '';
  let count = 0; // data events (not keep-alive comments) passed on to the client
  let open = true;
  inflight += 1;
  const close = () => {
    if (open) inflight -= 1;
    open = false;
  };
  const body = new ReadableStream({
    async pull(controller) {
      let next;
      try {
        next = await reader.read();
      } catch (error) {
        close();
        controller.error(error);
        return;
      }
      if (next.done) {
        close();
        controller.close();
        return;
      }
      const { events, rest } = sseEvents(buffer + decoder.decode(next.value, { stream: true }));
      buffer = rest;
      for (const event of events) {
        controller.enqueue(encoder.encode(event + '\n\n'));
        if (!event.split('\n').some(line => line.startsWith('data:'))) continue;
        count += 1;
        if (count === abortAfter) sideCalls.push(abortRun());
        if (count === dropAfter) {
          // What fetch reports when the connection goes away mid-body: a TypeError ("network error").
          await reader.cancel();
          close();
          controller.error(new TypeError('network error'));
          return;
        }
      }
    },
    cancel(reason) {
      close();
      return reader.cancel(reason);
    },
  });
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}

async function recordingFetch(url, init = {}) {
  const method = init.method ?? 'GET';
  const entry = { method, path: new URL(url).pathname, status: null };
  log.requests.push(entry);
  const options = method === 'POST' && nextResponse != null ? nextResponse : {};
  if (method === 'POST') nextResponse = null;
  if (scenario.latencyMs) await sleep(scenario.latencyMs);
  const response = await fetch(url, init).catch(error => {
    entry.error = String(error);
    throw error;
  });
  entry.status = response.status;
  return response.body == null ? response : watchBody(response, options);
}

async function post(path, body) {
  const response = await fetch(scenario.base + path, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { path, status: response.status, body: await response.json().catch(() => null) };
}

// -- the chat -------------------------------------------------------------------------------------

const automatic = {
  approvals: lastAssistantMessageIsCompleteWithApprovalResponses,
  toolCalls: lastAssistantMessageIsCompleteWithToolCalls,
}[scenario.sendAutomaticallyWhen];

const chat = new Chat({
  id: scenario.chatId,
  messages: scenario.messages ?? [],
  onStatus: status => log.statuses.push(status),
  transport: new DefaultChatTransport({ api: scenario.base + '/api/chat', fetch: recordingFetch, body: scenario.body }),
  sendAutomaticallyWhen: automatic,
  onFinish: ({ message, isAbort, isDisconnect, isError, finishReason }) =>
    log.finishes.push({ messageId: message.id, isAbort, isDisconnect, isError, finishReason: finishReason ?? null }),
  onError: error => log.errors.push({ name: error.name, message: error.message }),
});

async function abortRun() {
  const deadline = Date.now() + 5_000;
  let runId;
  while ((runId = chat.lastMessage?.metadata?.runId) == null || chat.lastMessage.role !== 'assistant') {
    if (Date.now() > deadline) return log.aborts.push({ error: 'no runId in the assistant message metadata' });
    await sleep(5);
  }
  log.aborts.push(await post(`/api/runs/${runId}/abort`, {}));
}

const toolParts = () =>
  chat.messages.flatMap(m => m.parts).filter(p => p.type.startsWith('tool-') || p.type === 'dynamic-tool');

function pendingApproval() {
  const part = toolParts().find(p => p.state === 'approval-requested');
  if (part == null) throw new Error('no tool part waits for an approval');
  return part.approval.id;
}

// Settled: no request in flight, status ready/error, for a few polls in a row (an automatic send
// starts a moment after the previous response ends).
async function settled() {
  const deadline = Date.now() + STEP_TIMEOUT_MS;
  for (let quiet = 0; quiet < 4; ) {
    if (Date.now() > deadline) throw new Error(`timed out; status ${chat.status}, ${inflight} requests in flight`);
    await sleep(15);
    quiet = inflight === 0 && (chat.status === 'ready' || chat.status === 'error') ? quiet + 1 : 0;
  }
}

async function webhookDuringResume(decision) {
  const approvalId = pendingApproval();
  const requestsBefore = log.requests.length;
  const resuming = chat.resumeStream();
  const deadline = Date.now() + STEP_TIMEOUT_MS;
  while (!log.requests.slice(requestsBefore).some(r => r.method === 'GET' && r.status != null)) {
    if (Date.now() > deadline) throw new Error('the resume request never got an answer');
    await sleep(5);
  }
  await sleep(100); // the resume stream is open (and idle at the wait) when the decision arrives
  log.webhooks.push({ statusDuringResume: chat.status, ...(await post(`/api/approvals/${approvalId}`, decision)) });
  await resuming;
}

async function runStep(step) {
  if (step.dropAfterChunks != null) nextResponse = { dropAfter: step.dropAfterChunks };
  if (step.abortAfterChunks != null) nextResponse = { abortAfter: step.abortAfterChunks };
  if (step.send != null) await chat.sendMessage({ text: step.send });
  else if (step.approve != null)
    await chat.addToolApprovalResponse({ id: pendingApproval(), approved: step.approve, reason: step.reason });
  else if (step.answer !== undefined) {
    const part = toolParts().find(p => p.type === 'tool-ask_user_question' && p.state === 'input-available');
    if (part == null) throw new Error('no ask_user_question call waits for an answer');
    await chat.addToolOutput({ tool: 'ask_user_question', toolCallId: part.toolCallId, output: step.answer });
  } else if (step.resume) await chat.resumeStream();
  else if (step.regenerate) await chat.regenerate();
  else if (step.webhookDuringResume != null) await webhookDuringResume(step.webhookDuringResume);
  else throw new Error(`unknown step ${JSON.stringify(step)}`);
  await settled();
}

for (const step of scenario.steps) {
  try {
    await runStep(step);
    log.steps.push({ step, status: chat.status, error: chat.error?.message ?? null });
  } catch (error) {
    log.steps.push({ step, status: chat.status, failed: String(error) });
    break;
  }
}

await Promise.all(sideCalls);
process.stdout.write(JSON.stringify({ messages: plain(chat.messages), status: chat.status, ...log }) + '\n', () =>
  process.exit(0),
);
