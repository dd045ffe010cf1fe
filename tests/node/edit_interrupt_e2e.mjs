// The real AI SDK Chat editing an earlier message while a run works, from another tab, under `interrupt`.
// Input (argv[2] or stdin): {"base", "chatId"}. Tab A sends "hello", then "answer slowly"; once that
// answer streams, tab B (which has the chat as it was after "hello") sends
// `sendMessage({ text: "hello again", messageId })` with `body: {onNewMessage: "interrupt"}`.
// Output (stdout): {"tabs": [{messages, status, error}]}, tab A first.
import { readFileSync } from 'node:fs';
import { DefaultChatTransport } from 'ai';
import { Chat } from './memory_chat.mjs';

const TIMEOUT_MS = 30_000;
const scenario = JSON.parse(readFileSync(process.argv[2] ?? 0, 'utf8'));
const sleep = ms => new Promise(resolve => setTimeout(resolve, ms));
const tab = body =>
  new Chat({ id: scenario.chatId, transport: new DefaultChatTransport({ api: scenario.base + '/api/chat', body }) });

async function until(check, what) {
  const deadline = Date.now() + TIMEOUT_MS;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(10);
  }
}

const a = tab(undefined);
await a.sendMessage({ text: 'hello' });
const b = tab({ onNewMessage: 'interrupt' });
b.messages = JSON.parse(JSON.stringify(a.messages));
const slow = a.sendMessage({ text: 'answer slowly' });
await until(
  () => a.lastMessage?.role === 'assistant' && a.lastMessage.parts.some(p => p.type === 'text' && p.text.length > 0),
  "tab A's slow answer",
);
await b.sendMessage({ text: 'hello again', messageId: b.messages[0].id });
await slow;
const record = chat => ({ messages: JSON.parse(JSON.stringify(chat.messages)), status: chat.status, error: chat.error?.message ?? null });
process.stdout.write(JSON.stringify({ tabs: [record(a), record(b)] }) + '\n', () => process.exit(0));
