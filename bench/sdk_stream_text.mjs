// Times the AI SDK's streamText with MockLanguageModelV4 on a scripted workload:
//   node sdk_stream_text.mjs steps <n>      n steps, each one tool call (a no-op tool), then a text step
//   node sdk_stream_text.mjs chunks <n>     one step streaming n text deltas
// Consumes the UI message stream (what an HTTP endpoint sends). Prints JSON seconds (best of 3).
import { createRequire } from 'node:module';
import { stepsScript, chunksScript } from './loop_workloads.mjs';

const require = createRequire(new URL('../tests/node/package.json', import.meta.url));
const { streamText, isStepCount, tool, jsonSchema } = await import(require.resolve('ai'));
const { MockLanguageModelV4, convertArrayToReadableStream } = await import(require.resolve('ai/test'));

const [workload, n] = process.argv.slice(2);
const script = workload === 'steps' ? stepsScript(Number(n)) : chunksScript(Number(n));

async function once() {
  let call = 0;
  const model = new MockLanguageModelV4({
    doStream: async () => ({ stream: convertArrayToReadableStream(script[call++]) }),
  });
  const result = streamText({
    model,
    prompt: 'bench',
    tools: { noop: tool({ inputSchema: jsonSchema({ type: 'object' }), execute: async () => ({ ok: true }) }) },
    stopWhen: isStepCount(script.length),
  });
  let count = 0;
  for await (const _ of result.toUIMessageStream()) count++;
  return count;
}

let best = Infinity;
let chunks = 0;
for (let i = 0; i < 3; i++) {
  const start = process.hrtime.bigint();
  chunks = await once();
  best = Math.min(best, Number(process.hrtime.bigint() - start) / 1e9);
}
console.log(JSON.stringify({ seconds: best, uiChunks: chunks }));
