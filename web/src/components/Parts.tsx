// The blocks of the execution trace, one per part, chosen by part type and tool: ThinkingBlock here;
// SubAgentBlock (a sub-agent call, its child's parts rendered here again, nested); ToolCallBlock and the dedicated tool blocks (ToolBlocks.tsx) with their ToolApprovalCard
// (ApprovalCard.tsx) or QuestionCard (QuestionCard.tsx); SourceList, FileCard and
// ProcessPartFallback (their own files).
import type { ReactNode } from 'react';
import { summarise, toolCallOf, type Part } from '../model';
import { isCodeTool } from './CodeInterpreterBlock';
import { FileCard } from './FileCard';
import { Icon } from './Icon';
import { Markdown } from './Markdown';
import type { PartContext } from './partContext';
import { BudgetCard } from './BudgetCard';
import { ProcessPartFallback } from './PartFallback';
import { SourceList, unlisted, type SourcePart } from './SourceList';
import { SteeringNote } from './SteeringNote';
import { SubAgentBlock } from './SubAgentBlock';
import { isSubAgentCall } from '../subAgents';
import { DedicatedToolBlock, ToolCallBlock, type SourceUrl } from './ToolBlocks';
import { WEB_SEARCH_TOOL } from './WebSearchBlock';

export function ThinkingBlock({ part, live }: { part: Extract<Part, { type: 'reasoning' }>; live: boolean }) {
  const streaming = live && part.state === 'streaming';
  return (
    <details className="block thinking" data-testid="thinking-block">
      <summary>
        <Icon name="brain" />
        <span className="block-title">{streaming ? 'Thinking…' : 'Thinking'}</span>
        <span className="block-summary">{summarise(part.text, 90)}</span>
      </summary>
      <div className="block-body">
        <Markdown text={part.text} />
      </div>
    </details>
  );
}

/**
 * The parts of the trace, strictly in order; consecutive sources are one list, and a page a list
 * of this message has already shown is not listed again (by URL, without its #fragment).
 */
export function renderTraceParts(parts: { part: Part; index: number }[], ctx: PartContext, wrap: (key: string, node: ReactNode, part: Part) => ReactNode) {
  const out: ReactNode[] = [];
  const listed = new Set<string>();
  for (let i = 0; i < parts.length; i++) {
    const { part, index } = parts[i];
    // A tool's block keeps its key when the parts before it change (a sub-agent's message so far,
    // then its stored message): it is not mounted again, and keeps what the person opened.
    const call = (part as { toolCallId?: unknown }).toolCallId;
    const key = typeof call === 'string' ? `t:${call}` : `p${index}`;
    if (part.type === 'source-url' || part.type === 'source-document') {
      const group: SourcePart[] = [];
      while (i < parts.length && (parts[i].part.type === 'source-url' || parts[i].part.type === 'source-document')) {
        group.push(parts[i].part as SourcePart);
        i++;
      }
      i--;
      const unique = unlisted(group, listed);
      if (unique.length > 0) out.push(wrap(key, <SourceList parts={unique} />, part));
      continue;
    }
    const tool = toolCallOf(part);
    if (tool && (tool.name === WEB_SEARCH_TOOL || isCodeTool(tool.name))) {
      // A search's result is also the source-url parts right after it: they are its URLs, not a list of their own.
      const sources: SourceUrl[] = [];
      while (tool.name === WEB_SEARCH_TOOL && i + 1 < parts.length && parts[i + 1].part.type === 'source-url') {
        sources.push(parts[i + 1].part as SourceUrl);
        i++;
      }
      out.push(wrap(key, <DedicatedToolBlock tool={tool} ctx={ctx} sources={sources} />, part));
    } else if (tool && isSubAgentCall(tool, ctx.subAgents ?? [], ctx.scope ?? '')) {
      out.push(wrap(key, <SubAgentBlock tool={tool} ctx={ctx} />, part));
    } else if (tool) {
      out.push(wrap(key, <ToolCallBlock tool={tool} ctx={ctx} />, part));
    } else if (part.type === 'data-budget') {
      const data = (part as unknown as { data: Parameters<typeof BudgetCard>[0]['data'] }).data;
      out.push(wrap(key, <BudgetCard data={data} ctx={ctx} />, part));
    } else if (part.type === 'steering-message') {
      out.push(wrap(key, <SteeringNote part={part} />, part));
    } else if (part.type === 'reasoning') {
      out.push(wrap(key, <ThinkingBlock part={part} live={ctx.live} />, part));
    } else if (part.type === 'text') {
      out.push(wrap(key, <div className="process-text"><Markdown text={part.text} /></div>, part));
    } else if (part.type === 'file' || part.type === 'reasoning-file') {
      const file = part as { url: string; mediaType: string; filename?: string };
      out.push(wrap(key, <FileCard url={file.url} mediaType={file.mediaType} filename={file.filename} />, part));
    } else {
      out.push(wrap(key, <ProcessPartFallback part={part} />, part));
    }
  }
  return out;
}
