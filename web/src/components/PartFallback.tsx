// What a part without a block of its own shows (`data-*`, `custom`, unknown types): its type, kind
// and raw data, diagnosable, never nothing; `data-retry` says a model call is retried.
import type { Part } from '../model';
import { ContextSummaryBlock, type ContextSummary } from './ContextSummaryBlock';
import { Icon } from './Icon';
import { Json } from './ToolBlocks';

export function ProcessPartFallback({ part }: { part: Part }) {
  const record = part as unknown as Record<string, unknown>;
  const kind = typeof record.kind === 'string' ? record.kind : undefined;
  if (part.type === 'data-retry') {
    const data = (record.data ?? {}) as { reason?: string; attempt?: number };
    return (
      <div className="block retry" data-testid="retry-notice">
        <Icon name="refresh" /> Model call failed ({data.reason ?? 'error'}); retrying, attempt {String(data.attempt ?? '?')}
      </div>
    );
  }
  if (part.type === 'data-context-summary') {
    return <ContextSummaryBlock data={(record.data ?? {}) as ContextSummary} />;
  }
  const { type: _type, ...rest } = record;
  return (
    <details className="block fallback" data-testid="part-fallback" data-part-type={part.type}>
      <summary>
        <Icon name="puzzle" />
        <span className="block-title">{part.type}</span>
        {kind && <span className="block-summary">{kind}</span>}
      </summary>
      <div className="block-body">
        <Json value={rest} />
      </div>
    </details>
  );
}
