// A file part of the trace (a generated image, document …): a card that opens its preview.
import { PreviewLink } from './FilePreview';
import { useImageUrl } from './fileUrl';
import { Icon } from './Icon';

/** An image file's thumbnail (fetched with the token when its URL is the API's). */
function Thumbnail({ url, alt }: { url: string; alt: string }) {
  const src = useImageUrl(url);
  return src ? <img src={src} alt={alt} /> : <Icon name="image" />;
}

export function FileCard({ url, mediaType, filename }: { url: string; mediaType: string; filename?: string }) {
  const image = mediaType.startsWith('image/') && (url.startsWith('data:') || url.startsWith('/'));
  const file = { url, mediaType, filename, title: filename ?? mediaType };
  return (
    <div className="block file-card" data-testid="file-card" data-media-type={mediaType}>
      <PreviewLink file={file} testId="file-open">
        {image ? <Thumbnail url={url} alt={filename ?? 'image'} /> : <Icon name="file" />}
        <span>{filename ?? mediaType}</span>
      </PreviewLink>
    </div>
  );
}
