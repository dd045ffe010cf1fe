// CodeInterpreterBlock (spec 000: toolName = code_interpreter): a terminal icon, collapsed by
// default; expanded, the language, `input.code`, and the output or the error, each apart.
import type { ToolCall } from '../model';
import { Icon, Spinner } from './Icon';

export const CODE_INTERPRETER_TOOL = 'code_interpreter';

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
  const language = typeof input.language === 'string' && input.language ? input.language : 'python';
  const code = typeof input.code === 'string' ? input.code : '';
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
