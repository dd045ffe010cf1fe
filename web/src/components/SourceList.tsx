// The pages a message cites: one list per run of source parts, each page once per message (by URL
// without its #fragment, across all of the message's lists).
import { sourceKey, type Part } from '../model';
import { Icon } from './Icon';

export type SourcePart = Extract<Part, { type: 'source-url' }> | Extract<Part, { type: 'source-document' }>;

/** The sources not listed yet (`listed` holds the keys of the message's earlier lists, and grows). */
export function unlisted(parts: SourcePart[], listed: Set<string>): SourcePart[] {
  return parts.filter(p => {
    const key = p.type === 'source-url' ? sourceKey(p.url) : `doc:${p.sourceId}:${p.title}`;
    if (listed.has(key)) return false;
    listed.add(key);
    return true;
  });
}

export function SourceList({ parts: unique }: { parts: SourcePart[] }) {
  return (
    <div className="block sources" data-testid="source-list">
      <div className="block-head">
        <Icon name="link" /> <span className="block-title">Sources</span>
        <span className="block-summary">{unique.length}</span>
      </div>
      <ul>
        {unique.map(p =>
          p.type === 'source-url' ? (
            <li key={p.url}>
              <a href={p.url} target="_blank" rel="noopener noreferrer">
                {p.title ?? p.url}
              </a>
              {p.title && <span className="url">{p.url}</span>}
            </li>
          ) : (
            <li key={`${p.sourceId}:${p.title}`}>
              <Icon name="file" /> {p.title} <span className="muted">({p.filename ?? p.mediaType})</span>
            </li>
          ),
        )}
      </ul>
    </div>
  );
}
