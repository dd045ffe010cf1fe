// The `ask_user_question` card in the trace: the question, its options, and what became of it
// (answered in the input area, cancelled, expired, stopped, not answered). An ended run's answer
// can be changed ("Change my answer"): a fork with the new answer, on a new branch.
import { useState, type ReactNode } from 'react';
import { closedByEnd, summarise, type ToolCall } from '../model';
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
  } else if (tool.state === 'output-error' && closedByEnd(tool, ctx.closed) && ctx.stopped) {
    state = 'aborted'; // the run's end closed it: stopped while it waited
    body = <p className="muted">Stopped before it was answered.</p>;
  } else if (tool.state === 'output-error' && closedByEnd(tool, ctx.closed)) {
    state = 'not-answered'; // interrupted by a new message, or the run failed
    body = <p className="muted">Not answered ({tool.errorText}).</p>;
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
      {state === 'answered' && ctx.changeable && ctx.runId && (
        <ChangeAnswer runId={ctx.runId} toolCallId={tool.toolCallId} options={options} ctx={ctx} />
      )}
    </div>
  );
}

/** "Change my answer" on an ended run's question: another option or a typed answer forks the run there. */
function ChangeAnswer(props: { runId: string; toolCallId: string; options: string[]; ctx: PartContext }) {
  const { runId, toolCallId, options, ctx } = props;
  const [open, setOpen] = useState(false);
  const [text, setText] = useState('');
  const [sending, setSending] = useState(false);
  if (!open) {
    return (
      <button type="button" className="link" data-testid="change-answer" onClick={() => setOpen(true)}>
        Change my answer
      </button>
    );
  }
  const change = async (answer: string) => {
    if (!answer.trim()) return;
    setSending(true);
    const forked = await ctx.session.changeAnswer(runId, { answers: [{ toolCallId, output: { answer: answer.trim() } }] });
    if (!forked) setSending(false);
  };
  return (
    <div className="change-answer" data-testid="change-question">
      {options.map(option => (
        <button key={option} type="button" disabled={sending} onClick={() => void change(option)} data-testid="change-answer-option">
          {option}
        </button>
      ))}
      <input type="text" placeholder="Your new answer" value={text} disabled={sending} onChange={e => setText(e.target.value)} aria-label="New answer" />
      <button type="button" className="primary" disabled={sending || !text.trim()} onClick={() => void change(text)} data-testid="change-answer-send">
        Answer instead
      </button>
      <button type="button" className="link" disabled={sending} onClick={() => setOpen(false)}>
        Keep it
      </button>
    </div>
  );
}
