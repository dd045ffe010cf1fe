// The real AI SDK Chat editing and regenerating earlier messages against a Stepline server, then
// switching branches the way the web UI does (POST /branch, then the chat's messages set to the
// conversation the server answers).
// Input (stdin): {"base", "chatId"}. Output (stdout): {"stages": {name: {messages, status, error}}}.
import { readFileSync } from 'node:fs';
import { DefaultChatTransport } from 'ai';
import { Chat } from './memory_chat.mjs';

const scenario = JSON.parse(readFileSync(process.argv[2] ?? 0, 'utf8'));


const chat = new Chat({
  id: scenario.chatId,
  transport: new DefaultChatTransport({ api: scenario.base + '/api/chat' }),
});
const stages = {};
const note = name => {
  stages[name] = {
    messages: JSON.parse(JSON.stringify(chat.messages)),
    status: chat.status,
    error: chat.error?.message ?? null,
  };
};

for (const text of ['one', 'two', 'three']) await chat.sendMessage({ text });
note('sent');
const second = chat.messages[2].id;
await chat.sendMessage({ text: 'two edited', messageId: second });
note('edited');
await chat.regenerate({ messageId: chat.messages[1].id });
note('regenerated');
// ‹ 1/2 › at a branching point: the first sibling's branch, as it was last seen.
async function switchTo(pick) {
  const shown = await (await fetch(`${scenario.base}/api/conversations/${scenario.chatId}`)).json();
  const response = await fetch(`${scenario.base}/api/conversations/${scenario.chatId}/branch`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messageId: pick(shown.branches).siblingIds[0] }),
  });
  if (!response.ok) throw new Error(`switch: ${response.status} ${await response.text()}`);
  chat.messages = (await response.json()).messages.map(({ id, role, parts, metadata }) => ({ id, role, parts, metadata }));
}
await switchTo(points => points[0]); // the first answer again: below it, the edited branch it was on
note('switchedBack');
await switchTo(points => points[points.length - 1]); // then the original second message
note('switched');
await chat.sendMessage({ text: 'four' });
note('continued');
process.stdout.write(JSON.stringify({ stages }) + '\n', () => process.exit(0));
