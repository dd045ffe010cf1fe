// WebSearchBlock (spec 000: toolName = web_search): the query as the title; expanded, one plain URL
// per line, from the tool's output merged with the source-url parts that follow it, deduplicated.
import { sourceKey, type Part, type ToolCall } from '../model';
import { Icon, Spinner } from './Icon';
import { ToolError } from './ToolError';

type SourceUrl = Extract<Part, { type: 'source-url' }>;

export const WEB_SEARCH_TOOL = 'web_search';

/** The query: `input.query` (the tools' own shape), or OpenAI's `action.query`, or the first of `queries`. */
export function searchQuery(tool: ToolCall): string {
  const input = (tool.input ?? {}) as Record<string, unknown>;
  const action = (input.action ?? {}) as Record<string, unknown>;
  const queries = Array.isArray(input.queries) ? input.queries : [];
  for (const candidate of [input.query, action.query, queries[0]]) {
    if (typeof candidate === 'string' && candidate.trim()) return candidate.trim();
  }
  return '';
}

/** Every URL in a search output: a JSON string, `{results|sources: [...]}`, or a list of `{url}` (Anthropic). */
export function outputUrls(output: unknown, depth = 0): string[] {
  if (depth > 4 || output === null || output === undefined) return [];
  if (typeof output === 'string') {
    const text = output.trim();
    if (text.startsWith('{') || text.startsWith('[')) {
      try {
        return outputUrls(JSON.parse(text), depth + 1);
      } catch {
        return [];
      }
    }
    return /^https?:\/\//.test(text) ? [text] : [];
  }
  if (Array.isArray(output)) return output.flatMap(item => outputUrls(item, depth + 1));
  if (typeof output === 'object') {
    const record = output as Record<string, unknown>;
    const own = typeof record.url === 'string' && /^https?:\/\//.test(record.url) ? [record.url] : [];
    const nested = ['results', 'sources', 'items', 'value', 'content'].flatMap(key =>
      key in record && typeof record[key] === 'object' ? outputUrls(record[key], depth + 1) : [],
    );
    return [...own, ...nested];
  }
  return [];
}

export function searchUrls(tool: ToolCall, sources: SourceUrl[]): string[] {
  const byKey = new Map<string, string>();
  for (const url of [...outputUrls(tool.output), ...sources.map(s => s.url)]) {
    if (!byKey.has(sourceKey(url))) byKey.set(sourceKey(url), url);
  }
  return [...byKey.values()];
}

export function WebSearchBlock({ tool, sources, status }: { tool: ToolCall; sources: SourceUrl[]; status: { label: string; tone: string; spin: boolean } }) {
  const query = searchQuery(tool);
  const urls = searchUrls(tool, sources);
  return (
    <div
      className={`block tool web-search tone-${status.tone}`}
      id={`tool-${tool.toolCallId}`}
      data-testid="web-search-block"
      data-tool-state={tool.state}
      data-tool-call-id={tool.toolCallId}
    >
      <details>
        <summary>
          <Icon name="search" />
          <span className="block-title" data-testid="web-search-query">
            {query || 'Web search'}
          </span>
          <span className="block-summary">{urls.length > 0 ? `${urls.length} ${urls.length === 1 ? 'result' : 'results'}` : ''}</span>
          <span className={`badge tone-${status.tone}`} data-testid="tool-status">
            {status.spin ? <Spinner /> : null}
            {status.label}
          </span>
        </summary>
        <div className="block-body">
          {urls.length === 0 ? (
            <p className="muted">No results.</p>
          ) : (
            <pre className="url-lines" data-testid="web-search-urls">
              {urls.join('\n')}
            </pre>
          )}
        </div>
      </details>
      <ToolError tool={tool} />
    </div>
  );
}
