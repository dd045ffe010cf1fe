// Markdown to sanitised HTML (marked + DOMPurify). Links open in a new tab; images from other
// origins are not loaded (no request leaves the page for content the model wrote): they become links.
import DOMPurify from 'dompurify';
import { marked } from 'marked';
import { memo, useMemo } from 'react';

marked.use({ gfm: true, breaks: false });

DOMPurify.addHook('afterSanitizeAttributes', node => {
  if (node.tagName === 'A') {
    node.setAttribute('target', '_blank');
    node.setAttribute('rel', 'noopener noreferrer');
  }
});

DOMPurify.addHook('uponSanitizeElement', (node, data) => {
  if (data.tagName !== 'img' || !(node instanceof Element)) return;
  const src = node.getAttribute('src') ?? '';
  const local = src.startsWith('data:image/') || (src.startsWith('/') && !src.startsWith('//'));
  if (local) return;
  const link = node.ownerDocument.createElement('a');
  link.setAttribute('href', src);
  link.textContent = `[image: ${node.getAttribute('alt') || src}]`;
  node.replaceWith(link);
});

export function renderMarkdown(text: string): string {
  const html = marked.parse(text, { async: false });
  return DOMPurify.sanitize(html, { FORBID_TAGS: ['style', 'form', 'input', 'button'] });
}

export const Markdown = memo(function Markdown({ text, cursor = false }: { text: string; cursor?: boolean }) {
  const html = useMemo(() => renderMarkdown(text), [text]);
  return (
    <div className={cursor ? 'markdown streaming' : 'markdown'}>
      <div dangerouslySetInnerHTML={{ __html: html }} />
      {cursor && <span className="cursor" data-testid="streaming-cursor" aria-hidden="true" />}
    </div>
  );
});
