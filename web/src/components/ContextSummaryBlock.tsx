// "Earlier context summarized": a compaction step of the run (a `data-context-summary` part); the
// summary opens on click.
import { Icon } from './Icon';
import { Markdown } from './Markdown';

/** The data of a `data-context-summary` part. */
export interface ContextSummary {
  summary?: string;
  index?: number;
  summarizedMessages?: number;
  tokensBefore?: number;
  tokensAfter?: number;
}

export function ContextSummaryBlock({ data }: { data: ContextSummary }) {
  const before = data.tokensBefore, after = data.tokensAfter;
  const figures = before !== undefined && after !== undefined ? `${before.toLocaleString()} → ${after.toLocaleString()} tokens` : '';
  return (
    <details className="block context-summary" data-testid="context-summary" data-summary-index={data.index}>
      <summary>
        <Icon name="brain" />
        <span className="block-title">Earlier context summarized</span>
        <span className="block-summary">{figures}</span>
      </summary>
      <div className="block-body" data-testid="context-summary-text">
        <Markdown text={data.summary ?? ''} />
      </div>
    </details>
  );
}
