// CodeInterpreterBlock (spec 000: toolName = code_interpreter): a terminal icon, collapsed by
// default; expanded, the language, `input.code`, and the output or the error, each apart.
// Anthropic's server tool `code_execution` shows in the same block: its bash command is the code,
// a file it writes (the text editor) is the file's text.
import type { ToolCall } from '../model';
import { Icon, Spinner } from './Icon';

export const CODE_INTERPRETER_TOOL = 'code_interpreter';
export const CODE_EXECUTION_TOOL = 'code_execution';

/** True for a tool shown in this block: OpenAI's code interpreter, Anthropic's code execution. */
export function isCodeTool(name: string): boolean {
  return name === CODE_INTERPRETER_TOOL || name === CODE_EXECUTION_TOOL;
}

/** The language and the code of a code tool's input, whichever provider's shape it has. */
export function codeOf(input: Record<string, unknown>): { language: string; code: string } {
  const text = (key: string) => (typeof input[key] === 'string' ? (input[key] as string) : '');
  if (input.type === 'bash_code_execution') return { language: 'bash', code: text('command') };
  if (input.type === 'text_editor_code_execution') {
    const path = text('path');
    return { language: path ? `${text('command')} ${path}` : text('command'), code: text('file_text') };
  }
  return { language: text('language') || 'python', code: text('code') };
}

/** What the run printed: a string as it is; else the usual fields of a code tool's result; else JSON. */
export function codeOutput(output: unknown): string {
  if (output === undefined || output === null) return '';
  if (typeof output === 'string') return output;
  if (Array.isArray(output)) return output.map(codeOutput).filter(Boolean).join('\n');
  if (typeof output === 'object') {
    const record = output as Record<string, unknown>;
    const parts = ['stdout', 'logs', 'output', 'result', 'text', 'outputs', 'content']
      .filter(key => key in record)
      .map(key => codeOutput(record[key]))
      .filter(Boolean);
    if (parts.length > 0) return parts.join('\n');
  }
  return JSON.stringify(output, null, 2);
}

/** A failure inside the tool's result (stderr, a non-zero return code), apart from a tool error. */
function resultError(output: unknown): string {
  if (!output || typeof output !== 'object' || Array.isArray(output)) return '';
  const record = output as Record<string, unknown>;
  return typeof record.stderr === 'string' ? record.stderr : '';
}

export function CodeInterpreterBlock({ tool, status }: { tool: ToolCall; status: { label: string; tone: string; spin: boolean } }) {
  const input = (tool.input ?? {}) as Record<string, unknown>;
  const { language, code } = codeOf(input);
  const output = tool.state === 'output-available' ? codeOutput(tool.output) : '';
  const stderr = tool.state === 'output-available' ? resultError(tool.output) : '';
  const firstLine = code.split('\n').find(line => line.trim()) ?? '';
  return (
    <div
      className={`block tool code-interpreter tone-${status.tone}`}
      id={`tool-${tool.toolCallId}`}
      data-testid="code-interpreter-block"
      data-tool-state={tool.state}
      data-tool-call-id={tool.toolCallId}
    >
      <details>
        <summary>
          <Icon name="terminal" />
          <span className="block-title">Code</span>
          <span className="block-summary">{firstLine}</span>
          <span className={`badge tone-${status.tone}`} data-testid="tool-status">
            {status.spin ? <Spinner /> : null}
            {status.label}
          </span>
        </summary>
        <div className="block-body">
          <div className="detail-label">Language</div>
          <div className="code-language" data-testid="code-language">
            {language}
          </div>
          <div className="detail-label">Code</div>
          <pre className="code" data-testid="code-source">
            {code}
          </pre>
          {tool.state === 'output-available' && (
            <>
              <div className="detail-label">Output</div>
              <pre className="code-output" data-testid="code-output">
                {output || '(no output)'}
              </pre>
            </>
          )}
          {stderr && <pre className="code-error" data-testid="code-stderr">{stderr}</pre>}
          {tool.state === 'output-error' && (
            <>
              <div className="detail-label">Error</div>
              <pre className="code-error" data-testid="code-error">
                {tool.errorText ?? 'The code did not run.'}
              </pre>
            </>
          )}
        </div>
      </details>
    </div>
  );
}
