// A tool call's error under its block: the text the run recorded (every tool block has one).
import type { ToolCall } from '../model';
import { Icon } from './Icon';

export function ToolError({ tool }: { tool: ToolCall }) {
  if (tool.state !== 'output-error' || !tool.errorText) return null;
  return (
    <div className="tool-error" data-testid="tool-error">
      <Icon name="alert" /> {tool.errorText}
    </div>
  );
}
