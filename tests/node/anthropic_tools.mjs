// Oracle for Anthropic's server tools: the real `ai` + `@ai-sdk/anthropic` (pinned in package.json)
// against Stepline's fake Messages API. One JSON request on stdin, one JSON answer on stdout:
//   {baseURL, model, tools: {name: {factory, args} | {kind: "returns", value, schema}}, prompt,
//    stopSteps, followUp?}
// → {chunks, message, followUp?: {chunks}}: the UI chunks of `toUIMessageStream({sendSources: true})`,
// the UI message they reduce to, and (with `followUp`) the chunks of a second turn whose history is
// `convertToModelMessages([user, that message, followUp])`. The requests are recorded by the fake.
import { createAnthropic } from '@ai-sdk/anthropic';
import { convertToModelMessages, isStepCount, jsonSchema, readUIMessageStream, streamText, tool } from 'ai';

const plain = value => (value === undefined ? null : JSON.parse(JSON.stringify(value)));

function streamOf(items) {
  return new ReadableStream({
    start(controller) {
      for (const item of items) controller.enqueue(item);
      controller.close();
    },
  });
}

function toolsOf(provider, specs) {
  return Object.fromEntries(
    Object.entries(specs ?? {}).map(([name, spec]) => {
      if (spec.factory != null) return [name, provider.tools[spec.factory](spec.args ?? {})];
      return [name, tool({ inputSchema: jsonSchema(spec.schema ?? { type: 'object' }), execute: async () => spec.value })];
    }),
  );
}

async function turn(provider, request, source) {
  let ids = 0;
  const result = streamText({
    model: provider(request.model),
    ...source,
    tools: toolsOf(provider, request.tools),
    stopWhen: isStepCount(request.stopSteps ?? 1),
    onError: ({ error }) => process.stderr.write(`streamText error: ${error?.message ?? error}\n`),
  });
  const chunks = [];
  const stream = result.toUIMessageStream({ sendSources: true, generateMessageId: () => `msg-${++ids}` });
  for await (const chunk of stream) chunks.push(chunk);
  let message = null;
  for await (const snapshot of readUIMessageStream({ stream: streamOf(chunks) })) message = snapshot;
  return { chunks: plain(chunks), message: plain(message) };
}

let input = '';
for await (const piece of process.stdin) input += piece;
const request = JSON.parse(input);
const provider = createAnthropic({ baseURL: request.baseURL, apiKey: 'sk-ant-oracle' });
const user = { id: 'u1', role: 'user', parts: [{ type: 'text', text: request.prompt }] };
const first = await turn(provider, request, { prompt: request.prompt });
const answer = { ...first };
if (request.followUp != null) {
  const next = { id: 'u2', role: 'user', parts: [{ type: 'text', text: request.followUp }] };
  const messages = await convertToModelMessages([user, first.message, next]);
  answer.followUp = await turn(provider, request, { messages });
}
process.stdout.write(JSON.stringify(answer) + '\n');
