// The AI SDK peer of bench/ttft.py: streamText on a mock model, served the way an AI SDK app serves it.
//
//   node bench/ttft_peer.mjs BOOK.json PORT
//
// POST /api/chat (DefaultChatTransport's body) → the script of the book whose name is the last user
// message's text → MockLanguageModelV4 (ai/test) playing its parts on the same schedule as Stepline's
// scripted model (part k is due the sum of `delaysMs` up to k after the call starts) →
// streamText(...).toUIMessageStreamResponse(), whose body is written to the socket as it comes.
// Everything is in this process and in memory: the reference for what durability adds.
import { createServer } from 'node:http';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(new URL('../tests/node/package.json', import.meta.url));
const { streamText } = await import(require.resolve('ai'));
const { MockLanguageModelV4 } = await import(require.resolve('ai/test'));

const [bookPath, port] = process.argv.slice(2);
const book = JSON.parse(readFileSync(bookPath, 'utf8'));
const scripts = new Map(book.scripts.map((s) => [s.name, s.steps[0]]));

function play(step) {
  return new ReadableStream({
    async start(controller) {
      let due = performance.now();
      for (const [k, part] of step.parts.entries()) {
        const pause = step.delaysMs?.[k] ?? step.delayMs ?? 0;
        if (pause) {
          due += pause;
          const wait = due - performance.now();
          if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
        }
        controller.enqueue(part);
      }
      controller.close();
    },
  });
}

function lastUserText(body) {
  const user = body.messages.filter((m) => m.role === 'user').at(-1);
  return user.parts.filter((p) => p.type === 'text').map((p) => p.text).join('');
}

const server = createServer(async (req, res) => {
  if (req.method === 'GET' && req.url === '/api/health') {
    res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}');
    return;
  }
  let raw = '';
  for await (const piece of req) raw += piece;
  const step = scripts.get(lastUserText(JSON.parse(raw)));
  if (!step) {
    res.writeHead(404).end();
    return;
  }
  const model = new MockLanguageModelV4({ doStream: async () => ({ stream: play(step) }) });
  const response = streamText({ model, prompt: 'bench' }).toUIMessageStreamResponse();
  res.writeHead(response.status, Object.fromEntries(response.headers));
  for await (const chunk of response.body) res.write(chunk);
  res.end();
});
server.listen(Number(port), '127.0.0.1', () => console.log(`peer listening on ${port}`));
