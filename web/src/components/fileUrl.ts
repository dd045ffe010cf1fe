// Files behind the API with sign-in on: an `<img src>` or `<a href download>` sends no
// Authorization, so such a URL (`/api/artifacts/{id}`, which redirects to a short-lived link) is
// fetched with the token instead: into a `blob:` URL for an image, on click for a download. Any
// other URL (a presigned link, a data: URL) is used as it is.
import { useEffect, useState, type MouseEvent } from 'react';
import { apiFetch, needsToken } from '../http';

async function blobOf(url: string): Promise<Blob> {
  const response = await apiFetch(url);
  if (!response.ok) throw new Error(`the server answered ${response.status}`);
  return response.blob();
}

/** The file's bytes: fetched with the token when the URL needs one. */
export async function fetchFile(url: string): Promise<Response> {
  return needsToken(url) ? apiFetch(url) : fetch(url);
}

/** `url` for an `<img>`: as it is, or a `blob:` URL of it fetched with the token (undefined while loading, '' when it failed). */
export function useImageUrl(url: string): string | undefined {
  const direct = !needsToken(url);
  const [loaded, setLoaded] = useState<string>();
  useEffect(() => {
    if (direct) return;
    let objectUrl: string | undefined;
    let cancelled = false;
    blobOf(url)
      .then(blob => {
        if (cancelled) return;
        objectUrl = URL.createObjectURL(blob);
        setLoaded(objectUrl);
      })
      .catch(() => {
        if (!cancelled) setLoaded('');
      });
    return () => {
      cancelled = true;
      if (objectUrl) URL.revokeObjectURL(objectUrl);
    };
  }, [url, direct]);
  return direct ? url : loaded;
}

/** A download link's click: a URL that needs the token is fetched with it and saved from a `blob:` URL. */
export function downloadClick(url: string, filename: string): (event: MouseEvent<HTMLAnchorElement>) => void {
  return event => {
    if (!needsToken(url)) return; // the browser downloads it
    event.preventDefault();
    void blobOf(url).then(blob => {
      const objectUrl = URL.createObjectURL(blob);
      const link = document.createElement('a');
      link.href = objectUrl;
      link.download = filename;
      link.click();
      setTimeout(() => URL.revokeObjectURL(objectUrl), 60_000);
    });
  };
}
