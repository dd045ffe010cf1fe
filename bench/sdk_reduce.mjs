// Times the AI SDK's reducer on a workload: `node sdk_reduce.mjs <workload> <n> [bytes]`.
// Two paths: the server-side one (createUIMessageStream + onEnd, no snapshots) and the client-side
// readUIMessageStream (a snapshot per visible change). Prints JSON: seconds per path (best of 3).
import { createRequire } from 'node:module';
import { textDeltas, toolInputDeltas } from './workloads.mjs';

const require = createRequire(new URL('../tests/node/package.json', import.meta.url));
const { createUIMessageStream, readUIMessageStream } = await import(require.resolve('ai'));

const [workload, n, bytes] = process.argv.slice(2);
const chunks = workload === 'text' ? textDeltas(Number(n)) : toolInputDeltas(Number(bytes), Number(n));

function streamOf(items) {
  return new ReadableStream({ start(c) { for (const i of items) c.enqueue(i); c.close(); } });
}

async function serverPath() {
  let final;
  const stream = createUIMessageStream({
    execute: ({ writer }) => { for (const chunk of chunks) writer.write(chunk); },
    onEnd: ({ responseMessage }) => { final = responseMessage; },
  });
  const reader = stream.getReader();
  while (!(await reader.read()).done);
  return final;
}

async function clientPath() {
  let last;
  for await (const snapshot of readUIMessageStream({ stream: streamOf(chunks) })) last = snapshot;
  return last;
}

async function best(fn, repeats) {
  let bestSeconds = Infinity;
  for (let i = 0; i < repeats; i++) {
    const start = process.hrtime.bigint();
    await fn();
    bestSeconds = Math.min(bestSeconds, Number(process.hrtime.bigint() - start) / 1e9);
  }
  return bestSeconds;
}

const repeats = Number(process.env.BENCH_REPEATS ?? 3);
console.log(JSON.stringify({ chunks: chunks.length, server: await best(serverPath, repeats), client: await best(clientPath, repeats) }));
