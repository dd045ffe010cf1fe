// The benchmark workloads, generated identically in Node and (bench/workloads.py) in Python.
export function textDeltas(n) {
  const chunks = [{ type: 'start', messageId: 'msg-bench' }, { type: 'start-step' }, { type: 'text-start', id: 't' }];
  for (let i = 0; i < n; i++) chunks.push({ type: 'text-delta', id: 't', delta: `tok${i % 97} ` });
  chunks.push({ type: 'text-end', id: 't' }, { type: 'finish-step' }, { type: 'finish', finishReason: 'stop' });
  return chunks;
}

export function toolInputText(bytes) {
  const rows = [];
  let size = 0;
  for (let i = 0; size < bytes; i++) {
    const row = JSON.stringify({ id: i, name: `row-${i}`, score: (i * 7919) % 1000 / 10, tags: ['a', 'b', `t${i % 13}`], note: 'lorem ipsum dolor sit amet' });
    rows.push(row);
    size += row.length + 1;
  }
  return `{"table":"bench","rows":[${rows.join(',')}]}`;
}

export function toolInputDeltas(bytes, n) {
  const text = toolInputText(bytes);
  const size = Math.ceil(text.length / n);
  const chunks = [{ type: 'start', messageId: 'msg-bench' }, { type: 'start-step' }, { type: 'tool-input-start', toolCallId: 'c1', toolName: 'load' }];
  for (let i = 0; i < text.length; i += size) chunks.push({ type: 'tool-input-delta', toolCallId: 'c1', inputTextDelta: text.slice(i, i + size) });
  chunks.push({ type: 'tool-input-available', toolCallId: 'c1', toolName: 'load', input: JSON.parse(text) }, { type: 'finish-step' }, { type: 'finish', finishReason: 'tool-calls' });
  return chunks;
}
