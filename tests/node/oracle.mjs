// Conformance oracle: runs the real `ai` package (pinned in package.json) on inputs from Stepline's tests.
// Protocol: one JSON request per stdin line, `{"id": n, "op": "...", ...}`; one JSON answer per stdout line,
// `{"id": n, "ok": true, "result": ...}` or `{"id": n, "ok": false, "error": {name, message}}`.
import readline from 'node:readline';
import {
  convertToModelMessages,
  isStepCount,
  jsonSchema,
  streamText,
  tool,
  DefaultChatTransport,
  parsePartialJson,
  readUIMessageStream,
  toUIMessageChunk,
  validateUIMessages,
} from 'ai';

function streamOf(items) {
  return new ReadableStream({
    start(controller) {
      for (const item of items) controller.enqueue(item);
      controller.close();
    },
  });
}

function describeError(error) {
  return {
    name: error?.name ?? typeof error,
    message: error?.message ?? String(error),
    ...(error?.chunkType != null ? { chunkType: error.chunkType, chunkId: error.chunkId } : {}),
  };
}

// JSON.stringify turns URL objects into their href and drops undefined: the comparable form.
const plain = value => (value === undefined ? null : JSON.parse(JSON.stringify(value)));

async function reduce({ chunks, message }) {
  const errors = [];
  const snapshots = [];
  for await (const snapshot of readUIMessageStream({
    stream: streamOf(chunks),
    message,
    onError: error => errors.push(describeError(error)),
  })) {
    snapshots.push(snapshot);
  }
  return { final: plain(snapshots.at(-1) ?? null), count: snapshots.length, errors };
}

async function convert({ messages, options }) {
  return plain(await convertToModelMessages(messages, options ?? {}));
}

async function validate({ messages }) {
  return plain(await validateUIMessages({ messages }));
}

// Parses an SSE body exactly as the browser client does: DefaultChatTransport over fetch.
async function parseSse({ body, status = 200, headers = {} }) {
  const transport = new DefaultChatTransport({
    api: 'http://stepline.test/api/chat',
    fetch: async () => new Response(body, { status, headers: { 'content-type': 'text/event-stream', ...headers } }),
  });
  const stream = await transport.sendMessages({
    chatId: 'chat',
    messages: [],
    trigger: 'submit-message',
    messageId: undefined,
    abortSignal: undefined,
  });
  const chunks = [];
  const reader = stream.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      chunks.push(value);
    }
  } catch (error) {
    return { chunks: plain(chunks), error: describeError(error) };
  }
  return { chunks: plain(chunks) };
}

async function sseToMessage(request) {
  const parsed = await parseSse(request);
  if (parsed.error) return { error: parsed.error };
  return reduce({ chunks: parsed.chunks, message: request.message });
}

function revive(part) {
  // Values JSON cannot carry: errors become Error objects, files get their base64 accessor.
  const revived = { ...part };
  if (part.error && typeof part.error === 'object' && part.error.__error__) {
    revived.error = new Error(part.error.message);
  }
  return revived;
}

function mapParts({ parts, options }) {
  const opts = { ...(options ?? {}) };
  if (opts.onErrorText != null) {
    const text = opts.onErrorText;
    opts.onError = () => text;
    delete opts.onErrorText;
  }
  return plain(parts.map(part => toUIMessageChunk(revive(part), opts) ?? null));
}

async function partialJson({ texts }) {
  const out = [];
  for (const text of texts) {
    const { value, state } = await parsePartialJson(text);
    out.push(value === undefined ? { undefined: true, state } : { value, state });
  }
  return out;
}

// streamText with a scripted MockLanguageModelV4; tools are declared as data so Python can mirror them.
function makeTool(spec, controller) {
  const definition = { inputSchema: jsonSchema(spec.schema ?? { type: 'object' }) };
  if (spec.kind === 'returns') definition.execute = async () => spec.value;
  if (spec.kind === 'throws') definition.execute = async () => { throw new Error(spec.message); };
  if (spec.kind === 'aborts') {
    definition.execute = async () => {
      controller.abort();
      await new Promise(() => {});
    };
  }
  return tool(definition);
}

async function runStreamText({ script, tools = {}, toolApproval, stopSteps = 1, prompt, messages }) {
  const { MockLanguageModelV4, convertArrayToReadableStream } = await import('ai/test');
  let call = 0;
  const model = new MockLanguageModelV4({
    doStream: async () => {
      const step = script[call++];
      if (step == null) throw new Error('script exhausted');
      return { stream: convertArrayToReadableStream(step) };
    },
  });
  const controller = new AbortController();
  const toolSet = Object.fromEntries(Object.entries(tools).map(([name, spec]) => [name, makeTool(spec, controller)]));
  const result = streamText({
    model,
    ...(prompt != null ? { prompt } : { messages }),
    tools: toolSet,
    ...(toolApproval != null ? { toolApproval } : {}),
    stopWhen: isStepCount(stopSteps),
    abortSignal: controller.signal,
    onError: () => {},
  });
  const chunks = [];
  for await (const chunk of result.toUIMessageStream({ generateMessageId: () => 'msg-1' })) chunks.push(chunk);
  return { chunks: plain(chunks), calls: call };
}

// streamText with the real OpenAI provider against Stepline's fake server (tests/support/fake_openai.py):
// `tools` maps a tool name to `{id, args}` of one of OpenAI's built-in tools, or to a function tool
// spec as runStreamText takes (`{kind: "returns", value}`).
async function openaiStream({ baseURL, apiKey, modelId = 'gpt-4.1', tools = {}, prompt, messages, providerOptions, toolChoice, stopSteps = 1 }) {
  const { createOpenAI } = await import('@ai-sdk/openai');
  const openai = createOpenAI({ baseURL, apiKey });
  const factories = {
    'openai.web_search': openai.tools.webSearch,
    'openai.file_search': openai.tools.fileSearch,
    'openai.code_interpreter': openai.tools.codeInterpreter,
    'openai.image_generation': openai.tools.imageGeneration,
  };
  const controller = new AbortController();
  const toolSet = Object.fromEntries(
    Object.entries(tools).map(([name, spec]) => [
      name,
      spec.id != null ? factories[spec.id](spec.args ?? {}) : makeTool(spec, controller),
    ]),
  );
  const errors = [];
  const result = streamText({
    model: openai.responses(modelId),
    ...(prompt != null ? { prompt } : { messages }),
    tools: toolSet,
    ...(providerOptions != null ? { providerOptions } : {}),
    ...(toolChoice != null ? { toolChoice } : {}),
    stopWhen: isStepCount(stopSteps),
    onError: ({ error }) => errors.push(describeError(error)),
  });
  const chunks = [];
  for await (const chunk of result.toUIMessageStream({ generateMessageId: () => 'msg-1', sendSources: true })) chunks.push(chunk);
  const response = await result.response;
  return { chunks: plain(chunks), messages: plain(response.messages), errors };
}

const ops = { openaiStream, runStreamText, partialJson, reduce, convert, validate, parseSse, sseToMessage, mapParts };

const lines = readline.createInterface({ input: process.stdin });
for await (const line of lines) {
  if (!line.trim()) continue;
  const request = JSON.parse(line);
  let answer;
  try {
    answer = { id: request.id, ok: true, result: await ops[request.op](request) };
  } catch (error) {
    answer = { id: request.id, ok: false, error: describeError(error) };
  }
  process.stdout.write(JSON.stringify(answer) + '\n');
}
