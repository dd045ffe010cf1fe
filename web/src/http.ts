// Every request the UI makes to the API goes through here: its URL under config.json's `apiBase`,
// and, with sign-in on, the ID token as `Authorization: Bearer`. A 401 (the token expired or was
// refused) is answered by renewing the token once and sending again; when that fails the browser
// goes to the provider's sign-in and comes back to the same page (the conversation is on the
// server; the page reopens it), and the request never settles, as the page is leaving.
import { authEnabled, bearer, renewed, signIn, signingOut } from './auth';

let apiBase = '';

export function setApiBase(base: string): void {
  apiBase = base;
}

/** `path` (`/api/...`) on the API's origin. */
export function apiUrl(path: string): string {
  return path.startsWith('/api/') ? `${apiBase}${path}` : path;
}

/** The API request's Authorization (empty when sign-in is off): DefaultChatTransport's `headers`. */
export async function authHeaders(): Promise<Record<string, string>> {
  const token = await bearer();
  return token ? { authorization: `Bearer ${token}` } : {};
}

/** A URL the API answers only with a token (an `<img>` or `<a href>` would send none). */
export function needsToken(url: string): boolean {
  if (!authEnabled() || !URL.canParse(url, window.location.href)) return false;
  const target = new URL(url, window.location.href);
  const api = new URL(apiUrl('/api/'), window.location.href);
  return target.origin === api.origin && target.pathname.startsWith(api.pathname);
}

function withToken(init: RequestInit | undefined, token: string | undefined): RequestInit {
  const headers = new Headers(init?.headers);
  if (token) headers.set('authorization', `Bearer ${token}`);
  return { ...init, headers };
}

/**
 * What an API request rejects with when no response came (the server down or restarting, the
 * connection cut): still the TypeError `fetch` gives, so code that tells a network failure by
 * `instanceof TypeError` (the AI SDK's among it) reads it the same, but known for what it is.
 */
export class Unreachable extends TypeError {
  override readonly name = 'TypeError';
  readonly unreachable = true;
}

async function send(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
  try {
    return await fetch(input, init);
  } catch (error) {
    if (error instanceof TypeError && !(error instanceof Unreachable)) throw new Unreachable(error.message, { cause: error });
    throw error;
  }
}

/** The last token the API refused: a request that would carry it waits for the renewal instead. */
let refused: string | undefined;

/** The token to send: none when there is no session (and none renews), never one already refused. */
async function usableToken(): Promise<string | undefined> {
  const token = await bearer();
  if (token && token !== refused) return token;
  const user = await renewed();
  return user?.id_token && user.id_token !== refused ? user.id_token : undefined;
}

/** A request that is never sent: the page is leaving (to sign in, or signed out). */
function leave(): Promise<Response> {
  return new Promise<Response>(() => undefined);
}

/**
 * `fetch` for the API: the token on it, a 401 renewed once, else a new sign-in. With sign-in on,
 * a request is never sent without a token (the API would only refuse it), nor with one the API
 * has refused (it waits for the renewal, which concurrent requests share): with no session it
 * renews, else signs in; once sign-out has begun (a view re-reading as the tokens go) it is dropped.
 */
export async function apiFetch(input: RequestInfo | URL, init?: RequestInit): Promise<Response> {
  if (!authEnabled()) return send(input, init);
  if (signingOut()) return leave();
  const token = await usableToken();
  if (signingOut()) return leave();
  if (token) {
    const response = await send(input, withToken(init, token));
    if (response.status !== 401) return response;
    refused = token;
    const renewedToken = await usableToken(); // another request's renewal, or this one's
    if (renewedToken) {
      const again = await send(input, withToken(init, renewedToken));
      if (again.status !== 401) return again;
      refused = renewedToken;
    }
  }
  if (!signingOut()) await signIn();
  return leave();
}
