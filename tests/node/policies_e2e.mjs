// The real AI SDK Chat against a Stepline server: a new message while a run works, from another tab.
// Input (argv[2] or stdin): {"base", "chatId", "first": "text", "waitFor": "text" | "tool",
//   "then": [{"text", "policy"}]}. Tab A sends `first`; once its answer streams (`waitFor`), one more
//   tab per entry of `then` sends its text with `body: {onNewMessage: policy}` (all at once, in order).
// Output (stdout): {"tabs": [{messages, status, error, finishes}]}, tab A first.
import { readFileSync } from 'node:fs';
import { DefaultChatTransport } from 'ai';
import { Chat } from './memory_chat.mjs';

const TIMEOUT_MS = 30_000;
const scenario = JSON.parse(readFileSync(process.argv[2] ?? 0, 'utf8'));
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));


function tab(body) {
  const record = { finishes: [] };
  const chat = new Chat({
    id: scenario.chatId,
    transport: new DefaultChatTransport({ api: scenario.base + '/api/chat', body }),
    onFinish: ({ message, isAbort, isError, finishReason }) =>
      record.finishes.push({ messageId: message.id, isAbort, isError, finishReason: finishReason ?? null }),
  });
  return { chat, record };
}

async function until(check, what) {
  const deadline = Date.now() + TIMEOUT_MS;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

// The server has the tab's message (waiting, or in the chat), or has refused it.
async function arrived(chat, what) {
  const deadline = Date.now() + TIMEOUT_MS;
  for (;;) {
    const id = chat.messages[0]?.id;
    if (chat.status === 'error') return;
    if (id != null) {
      const response = await fetch(`${scenario.base}/api/conversations/${scenario.chatId}`);
      const stored = response.ok ? await response.json() : { messages: [], waiting: [] };
      if ([...stored.messages, ...stored.waiting].some(m => m.id === id)) return;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

const answer = chat => (chat.lastMessage?.role === 'assistant' ? chat.lastMessage : undefined);
const streamed = {
  text: chat => answer(chat)?.parts.some(p => p.type === 'text' && p.text.length > 0),
  tool: chat => answer(chat)?.parts.some(p => p.type.startsWith('tool-') && p.state === 'input-available'),
};

const first = tab(undefined);
const sending = [first.chat.sendMessage({ text: scenario.first })];
await until(() => streamed[scenario.waitFor ?? 'text'](first.chat), `tab A's answer (${scenario.waitFor})`);
const others = scenario.then.map(next => tab({ onNewMessage: next.policy }));
for (const [index, next] of scenario.then.entries()) {
  sending.push(others[index].chat.sendMessage({ text: next.text }));
  await arrived(others[index].chat, `tab ${index + 1}'s message`); // the order they meet the run in
}
await Promise.all(sending);
const report = [first, ...others].map(({ chat, record }) => ({
  messages: JSON.parse(JSON.stringify(chat.messages)),
  status: chat.status,
  error: chat.error?.message ?? null,
  ...record,
}));
process.stdout.write(JSON.stringify({ tabs: report }) + '\n', () => process.exit(0));
