// The UI's runtime configuration, `/config.json`: written by the stack at deploy time (template.yaml's
// UiContent) and answered by `stepline dev`, so one build serves every deployment. Without it (a
// build served by something else, `npm run dev`) the defaults hold: the API on this origin, no sign-in.

/** Where and how the UI signs in: an OpenID provider and the UI's public client there. */
export interface AuthConfig {
  /** The issuer (its `/.well-known/openid-configuration` says the rest). */
  authority: string;
  clientId: string;
  scope: string;
  /**
   * Where sign-out goes instead of the standard end-session endpoint: Cognito's managed-login
   * `https://<domain>/logout`, which takes `client_id` and `logout_uri`.
   */
  logoutUrl?: string;
}

export interface UiConfig {
  /** Prefix of every API URL ("" = this origin). */
  apiBase: string;
  /** null: no sign-in (local dev tokens, or one local user). */
  auth: AuthConfig | null;
}

const DEFAULTS: UiConfig = { apiBase: '', auth: null };

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

/** The configuration from its JSON; a malformed `auth` is an Error naming the field. */
export function parseConfig(body: unknown): UiConfig {
  if (typeof body !== 'object' || body === null) return DEFAULTS;
  const { apiBase, auth } = body as { apiBase?: unknown; auth?: unknown };
  const base = (text(apiBase) ?? '').replace(/\/+$/, '');
  if (auth === null || auth === undefined) return { apiBase: base, auth: null };
  const fields = auth as Record<string, unknown>;
  const authority = text(fields.authority);
  const clientId = text(fields.clientId);
  if (!authority) throw new Error('config.json: auth.authority is missing');
  if (!clientId) throw new Error('config.json: auth.clientId is missing');
  const logoutUrl = text(fields.logoutUrl);
  return {
    apiBase: base,
    auth: { authority, clientId, scope: text(fields.scope) ?? 'openid', ...(logoutUrl ? { logoutUrl } : {}) },
  };
}

/** `/config.json`, or the defaults when there is none (404, or not JSON: a dev server's fallback page). */
export async function loadConfig(): Promise<UiConfig> {
  const response = await fetch('/config.json', { headers: { accept: 'application/json' }, cache: 'no-store' });
  if (!response.ok) return DEFAULTS;
  let body: unknown;
  try {
    body = await response.json();
  } catch {
    return DEFAULTS;
  }
  return parseConfig(body);
}
