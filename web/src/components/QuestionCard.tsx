// The `ask_user_question` card in the trace: the question, its options, and what became of it
// (answered in the input area, cancelled, expired, stopped, not answered).
import type { ReactNode } from 'react';
import { summarise, type ToolCall } from '../model';
import { Icon } from './Icon';
import type { PartContext } from './partContext';

export function questionOf(tool: ToolCall): { question: string; options: string[] } {
  const input = (tool.input ?? {}) as Record<string, unknown>;
  return {
    question: typeof input.question === 'string' ? input.question : '',
    options: Array.isArray(input.options) ? input.options.map(String) : [],
  };
}

function answerText(output: unknown): string {
  if (output && typeof output === 'object' && 'answer' in output) return String((output as { answer: unknown }).answer);
  return summarise(output, 200);
}

export function QuestionCard({ tool, ctx }: { tool: ToolCall; ctx: PartContext }) {
  const { question, options } = questionOf(tool);
  let state: string;
  let body: ReactNode = null;
  if (tool.state === 'output-available') {
    state = 'answered';
    body = <p className="answer">Answer: {answerText(tool.output)}</p>;
  } else if (tool.state === 'output-error') {
    const expired = /timeout|expired/i.test(tool.errorText ?? '');
    state = expired ? 'expired' : 'cancelled';
    body = <p className="muted">{expired ? 'Expired: no answer in time.' : `Cancelled (${tool.errorText ?? 'no answer'}).`}</p>;
  } else if (ctx.readOnly && ctx.stopped) {
    state = 'aborted';
    body = <p className="muted">Stopped before it was answered.</p>;
  } else if (ctx.readOnly) {
    state = 'not-answered';
    body = <p className="muted">Not answered.</p>;
  } else {
    state = 'waiting';
    body = <p className="muted">Waiting for your answer: answer in the box below.</p>;
  }
  return (
    <div className="block question" id={`tool-${tool.toolCallId}`} data-testid="question-card" data-question-state={state} data-tool-state={tool.state}>
      <div className="question-head">
        <Icon name="question" />
        <span className="block-title">{question || 'Question'}</span>
      </div>
      {options.length > 0 && (
        <ul className="options">
          {options.map(o => (
            <li key={o}>{o}</li>
          ))}
        </ul>
      )}
      {body}
    </div>
  );
}
