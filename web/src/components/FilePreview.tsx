// Previews of artifacts and files (spec 000's FileCard and message-level artifacts): an image,
// text, Markdown or a PDF opens in a dialog on this page instead of a download through a tab that
// flashes open; the dialog keeps a Download button. Anything else downloads as before.
import { useEffect, useRef, useState, type ReactNode } from 'react';
import { downloadClick, fetchFile, useImageUrl } from './fileUrl';
import { Icon } from './Icon';
import { Markdown } from './Markdown';
import './blocks.css';

export interface PreviewFile {
  url: string;
  title: string;
  mediaType?: string;
  filename?: string;
}

export type PreviewKind = 'image' | 'pdf' | 'markdown' | 'text';

const TEXT_TYPES = ['application/json', 'application/xml', 'application/x-yaml', 'application/yaml', 'application/javascript'];
const MAX_TEXT = 200_000;

/** How `file` previews, from its media type, else its name's extension; null: download only. */
export function previewKind(file: PreviewFile): PreviewKind | null {
  const type = (file.mediaType ?? '').split(';')[0].trim().toLowerCase();
  const name = (file.filename ?? file.title ?? '').toLowerCase();
  if (type.startsWith('image/') || /\.(png|jpe?g|gif|webp|svg)$/.test(name)) return 'image';
  if (type === 'application/pdf' || name.endsWith('.pdf')) return 'pdf';
  if (type === 'text/markdown' || /\.(md|markdown)$/.test(name)) return 'markdown';
  if (type.startsWith('text/') || TEXT_TYPES.includes(type) || /\.(txt|csv|json|log|ya?ml|py|ts|js)$/.test(name)) return 'text';
  return null;
}

type Loaded = { state: 'loading' } | { state: 'failed'; message: string } | { state: 'text'; text: string; cut: boolean } | { state: 'blob'; url: string };

/** The file's bytes for a preview that needs them (text, Markdown, PDF); an image loads by itself. */
function useContent(file: PreviewFile, kind: PreviewKind): Loaded {
  const [loaded, setLoaded] = useState<Loaded>({ state: 'loading' });
  useEffect(() => {
    if (kind === 'image') return;
    let objectUrl: string | undefined;
    let cancelled = false;
    (async () => {
      const response = await fetchFile(file.url);
      if (!response.ok) throw new Error(`the server answered ${response.status}`);
      const blob = await response.blob();
      if (cancelled) return;
      if (kind === 'pdf') {
        objectUrl = URL.createObjectURL(new Blob([blob], { type: 'application/pdf' }));
        setLoaded({ state: 'blob', url: objectUrl });
      } else {
        const text = await blob.text();
        if (!cancelled) setLoaded({ state: 'text', text: text.slice(0, MAX_TEXT), cut: text.length > MAX_TEXT });
      }
    })().catch((error: unknown) => {
      if (!cancelled) setLoaded({ state: 'failed', message: error instanceof Error ? error.message : String(error) });
    });
    return () => {
      cancelled = true;
      if (objectUrl) URL.revokeObjectURL(objectUrl);
    };
  }, [file.url, kind]);
  return loaded;
}

function PreviewBody({ file, kind }: { file: PreviewFile; kind: PreviewKind }) {
  const loaded = useContent(file, kind);
  const [imageFailed, setImageFailed] = useState(false);
  const imageUrl = useImageUrl(kind === 'image' ? file.url : '');
  if (kind === 'image') {
    if (imageUrl === undefined) return <p className="muted">Loading…</p>;
    return imageFailed || imageUrl === '' ? (
      <p className="muted" data-testid="preview-failed">The image cannot be shown here; download it instead.</p>
    ) : (
      <img className="preview-image" src={imageUrl} alt={file.title} data-testid="preview-image" onError={() => setImageFailed(true)} />
    );
  }
  if (loaded.state === 'loading') return <p className="muted">Loading…</p>;
  if (loaded.state === 'failed') {
    return (
      <p className="muted" data-testid="preview-failed">
        The preview cannot be loaded ({loaded.message}); download the file instead.
      </p>
    );
  }
  if (loaded.state === 'blob') return <iframe className="preview-pdf" src={loaded.url} title={file.title} data-testid="preview-pdf" />;
  const cut = loaded.cut ? <p className="muted">Only the beginning is shown; download the file for all of it.</p> : null;
  return kind === 'markdown' ? (
    <div className="preview-markdown" data-testid="preview-markdown">
      <Markdown text={loaded.text} />
      {cut}
    </div>
  ) : (
    <>
      <pre className="preview-text" data-testid="preview-text">
        {loaded.text}
      </pre>
      {cut}
    </>
  );
}

export function PreviewDialog({ file, onClose }: { file: PreviewFile; onClose: () => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  const kind = previewKind(file) ?? 'text';
  useEffect(() => {
    const dialog = ref.current;
    if (dialog && !dialog.open) dialog.showModal();
    return () => dialog?.close();
  }, []);
  return (
    <dialog
      ref={ref}
      className="preview"
      data-testid="preview-dialog"
      data-preview-kind={kind}
      onClose={onClose}
      onClick={e => {
        if (e.target === ref.current) onClose(); // a click on the backdrop
      }}
    >
      <header className="preview-head">
        <Icon name={kind === 'image' ? 'image' : 'file'} />
        <span className="preview-title">{file.title}</span>
        {file.mediaType && file.mediaType !== file.title && <span className="muted">{file.mediaType}</span>}
        <a
          className="button"
          href={file.url}
          download={file.filename ?? file.title}
          onClick={downloadClick(file.url, file.filename ?? file.title)}
          data-testid="preview-download"
        >
          <Icon name="download" /> Download
        </a>
        <button type="button" className="icon-button" onClick={onClose} aria-label="Close preview" data-testid="preview-close">
          <Icon name="x" />
        </button>
      </header>
      <div className="preview-body">
        <PreviewBody file={file} kind={kind} />
      </div>
    </dialog>
  );
}

/**
 * A control that opens `file` in a preview when it has one, else a plain download link (no new
 * tab either way). `children` is what it shows.
 */
export function PreviewLink({ file, className, testId, children }: { file: PreviewFile; className?: string; testId?: string; children: ReactNode }) {
  const [open, setOpen] = useState(false);
  if (previewKind(file) === null) {
    return (
      <a
        className={className}
        href={file.url}
        download={file.filename ?? file.title}
        onClick={downloadClick(file.url, file.filename ?? file.title)}
        data-testid={testId}
        data-preview="none"
      >
        {children}
      </a>
    );
  }
  return (
    <>
      <button type="button" className={`preview-link ${className ?? ''}`} onClick={() => setOpen(true)} data-testid={testId} data-preview={previewKind(file)}>
        {children}
      </button>
      {open && <PreviewDialog file={file} onClose={() => setOpen(false)} />}
    </>
  );
}
