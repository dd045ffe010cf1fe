// Sign-in, when config.json has `auth`: the authorization code flow with PKCE through
// oidc-client-ts's UserManager (a redirect to the provider and back to this origin's `/`), the
// tokens kept in sessionStorage (this tab; gone with it), renewed with the refresh token, and
// sign-out. Without `auth` nothing here runs and requests carry no Authorization.
//
// The API checks the **ID token** (audience = the UI's client id): API Gateway's Cognito
// authorizer without OAuth scopes, and `stepline dev`'s JwtIdentity, both verify ID tokens. So
// `bearer()` is the ID token, not the access token (Cognito's access tokens carry no audience).
import { UserManager, WebStorageStateStore, type User } from 'oidc-client-ts';
import type { AuthConfig } from './config';

/** Who is signed in, for the account control. */
export interface Account {
  name: string;
  email?: string;
}

export type AuthStart =
  | { kind: 'off' }
  | { kind: 'signed-in'; account: Account }
  | { kind: 'signed-out' }
  | { kind: 'failed'; message: string }
  | { kind: 'redirecting' };

interface ReturnState {
  /** The page to reopen after the provider sends the browser back (`/c/{conversationId}`). */
  returnTo: string;
}

/** Set by sign-out, so the page it returns to offers a sign-in instead of starting one. */
const SIGNED_OUT_KEY = 'stepline.signedOut';
/** A token this close to its expiry is renewed before it is sent (clocks differ a little). */
const RENEW_MARGIN_SECONDS = 10;

let manager: UserManager | undefined;
let config: AuthConfig | undefined;
let renewal: Promise<User | null> | undefined;
let redirecting: Promise<void> | undefined;
/** Sign-out has begun: the page is leaving, and no request may start a sign-in on its way out. */
let leaving = false;

function here(): string {
  return window.location.pathname;
}

function callbackUrl(): string {
  // The app client's callback and sign-out URL are the UI's origin (template.yaml).
  return `${window.location.origin}/`;
}

function isCallback(): boolean {
  const params = new URLSearchParams(window.location.search);
  return window.location.pathname === '/' && params.has('state') && (params.has('code') || params.has('error'));
}

function safeReturn(state: unknown): string {
  const returnTo = (state as Partial<ReturnState> | undefined)?.returnTo;
  // Only a path of this origin (never `//elsewhere`): the state comes back through the URL.
  return typeof returnTo === 'string' && /^\/(?!\/)/.test(returnTo) ? returnTo : '/';
}

function accountOf(user: User): Account {
  const { name, email, preferred_username: username, sub } = user.profile;
  return { name: name ?? username ?? email ?? sub, ...(email ? { email } : {}) };
}

/** Sign-in is configured (requests need a token). */
export function authEnabled(): boolean {
  return manager !== undefined;
}

/**
 * Set up sign-in from the configuration and settle who is signed in: back from the provider
 * (the callback: the page the user was on is restored), a stored session (renewed when it has
 * expired), or nobody (a redirect to the provider starts, unless the user has just signed out).
 */
export async function startAuth(auth: AuthConfig | null): Promise<AuthStart> {
  if (!auth) return { kind: 'off' };
  config = auth;
  manager = new UserManager({
    authority: auth.authority,
    client_id: auth.clientId,
    redirect_uri: callbackUrl(),
    post_logout_redirect_uri: callbackUrl(),
    response_type: 'code',
    scope: auth.scope,
    userStore: new WebStorageStateStore({ store: window.sessionStorage }),
    // Renewal is on demand, before a request and after a 401 (`bearer`, `renewed`): one at a time,
    // as a rotated refresh token must be used once; a timer in the background would race them.
    automaticSilentRenew: false,
    loadUserInfo: false, // the ID token has the name and email (Cognito's does)
  });
  if (isCallback()) {
    try {
      const user = await manager.signinRedirectCallback();
      window.sessionStorage.removeItem(SIGNED_OUT_KEY);
      window.history.replaceState(null, '', safeReturn(user.state));
      return { kind: 'signed-in', account: accountOf(user) };
    } catch (error) {
      window.history.replaceState(null, '', '/');
      return { kind: 'failed', message: error instanceof Error ? error.message : String(error) };
    }
  }
  let user = await manager.getUser();
  if (user?.expired) user = await renewed();
  if (user) return { kind: 'signed-in', account: accountOf(user) };
  if (window.sessionStorage.getItem(SIGNED_OUT_KEY)) return { kind: 'signed-out' };
  await signIn();
  return { kind: 'redirecting' };
}

/**
 * Go to the provider's sign-in; it sends the browser back to `returnTo` (default: this page).
 * Concurrent callers (several requests refused at once) share one redirect: a second one would
 * abort the first navigation and replace the sign-in state it stored.
 */
export function signIn(returnTo: string = here()): Promise<void> {
  const users = manager;
  if (!users) return Promise.resolve();
  redirecting ??= (async () => {
    window.sessionStorage.removeItem(SIGNED_OUT_KEY);
    const state: ReturnState = { returnTo };
    await users.signinRedirect({ state });
  })().catch((error: unknown) => {
    redirecting = undefined; // the redirect never left (the provider unreachable): the next call tries again
    throw error;
  });
  return redirecting;
}

/**
 * A fresh token from the refresh token (null when there is none, or the provider refused it:
 * the session is over). Concurrent callers share one renewal.
 */
export function renewed(): Promise<User | null> {
  const users = manager;
  if (!users) return Promise.resolve(null);
  renewal ??= (async () => {
    try {
      const user = await users.getUser();
      if (!user?.refresh_token) return null;
      return await users.signinSilent();
    } catch {
      return null;
    } finally {
      renewal = undefined;
    }
  })();
  return renewal;
}

/** Sign-out has begun (the tokens are gone or going, the page is on its way to the provider). */
export function signingOut(): boolean {
  return leaving;
}

/** The ID token to send as `Authorization: Bearer`, renewed first when it is about to expire. */
export async function bearer(): Promise<string | undefined> {
  if (!manager) return undefined;
  let user = await manager.getUser();
  if (user && (user.expires_in ?? Infinity) < RENEW_MARGIN_SECONDS) user = (await renewed()) ?? user;
  return user?.id_token;
}

/**
 * Sign out: config.json's `logoutUrl` when there is one (Cognito's managed-login `/logout`: its
 * discovery names it as the end-session endpoint, but it wants `client_id` and `logout_uri`, not
 * the standard `post_logout_redirect_uri`), else the provider's end-session endpoint when its
 * discovery names one (it ends the provider's session and returns here), else only this tab's
 * tokens are forgotten.
 */
export async function signOut(): Promise<void> {
  if (!manager || !config) return;
  leaving = true;
  window.sessionStorage.setItem(SIGNED_OUT_KEY, '1');
  if (config.logoutUrl) {
    await manager.removeUser();
    const query = new URLSearchParams({ client_id: config.clientId, logout_uri: callbackUrl() });
    window.location.assign(`${config.logoutUrl}?${query.toString()}`);
    return;
  }
  let endSession: string | undefined;
  try {
    endSession = await manager.metadataService.getEndSessionEndpoint();
  } catch {
    endSession = undefined;
  }
  if (endSession) {
    await manager.signoutRedirect();
    return;
  }
  await manager.removeUser();
  window.location.assign('/');
}
