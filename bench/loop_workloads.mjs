// Scripted model output for the loop benchmarks, identical in bench/loop_workloads.py.
const finish = reason => ({
  type: 'finish',
  finishReason: { unified: reason, raw: reason },
  usage: { inputTokens: { total: 10 }, outputTokens: { total: 5 } },
});

export function stepsScript(n) {
  const steps = [];
  for (let i = 0; i < n; i++) {
    steps.push([{ type: 'tool-call', toolCallId: `c${i}`, toolName: 'noop', input: '{}' }, finish('tool-calls')]);
  }
  steps.push([{ type: 'text-start', id: 't' }, { type: 'text-delta', id: 't', delta: 'done' }, { type: 'text-end', id: 't' }, finish('stop')]);
  return steps;
}

export function chunksScript(n) {
  const parts = [{ type: 'text-start', id: 't' }];
  for (let i = 0; i < n; i++) parts.push({ type: 'text-delta', id: 't', delta: `tok${i % 97} ` });
  parts.push({ type: 'text-end', id: 't' }, finish('stop'));
  return [parts];
}
