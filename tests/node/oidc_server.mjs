// A local OpenID provider for the browser tests of the UI's sign-in: the maintained `oidc-provider`
// package, on 127.0.0.1 and a free port, with one client shaped like template.yaml's Cognito app
// client (public, authorization code + PKCE, callback and sign-out URL the UI's origin `/`,
// refresh tokens without `offline_access`, claims in the ID token) and a minimal sign-in page the
// test fills in (any user name; the name is the user's `sub`). Nothing is loaded from elsewhere.
//
//   node oidc_server.mjs --origin http://127.0.0.1:PORT [--client-id ID] [--ttl SECONDS]
//
// It prints one JSON line, {"issuer": "http://127.0.0.1:N"}, once it listens, and runs until killed.
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import { parseArgs } from 'node:util';
import Provider from 'oidc-provider';

const { values } = parseArgs({
  options: {
    origin: { type: 'string' },
    'client-id': { type: 'string', default: 'stepline-ui' },
    ttl: { type: 'string', default: '600' },
  },
});
if (!values.origin) throw new Error('--origin (the UI origin, http://127.0.0.1:PORT) is required');
const origin = new URL(values.origin).origin;
const ttl = Number(values.ttl);

const escape = text => String(text).replace(/[&<>"']/g, c => `&#${c.charCodeAt(0)};`);
const page = (title, body) =>
  `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>${escape(title)}</title><link rel="icon" href="data:,"></head>` +
  `<body><main><h1>${escape(title)}</h1>${body}</main></body></html>`;

const key = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' });

const configuration = {
  clients: [
    {
      client_id: values['client-id'],
      token_endpoint_auth_method: 'none',
      redirect_uris: [`${origin}/`],
      post_logout_redirect_uris: [`${origin}/`],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
    },
  ],
  jwks: { keys: [{ ...key, kid: 'test-key', alg: 'RS256', use: 'sig' }] },
  cookies: { keys: [randomBytes(32).toString('hex')] },
  claims: { openid: ['sub'], email: ['email', 'email_verified'], profile: ['name'] },
  // Like Cognito: the ID token carries the scopes' claims, and a refresh token comes with every sign-in.
  conformIdTokenClaims: false,
  issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
  ttl: { IdToken: ttl, AccessToken: ttl, RefreshToken: 3600, Session: 3600, Grant: 3600, Interaction: 600 },
  clientBasedCORS: (_ctx, requestOrigin) => requestOrigin === origin,
  findAccount: async (_ctx, sub) => ({
    accountId: sub,
    claims: async () => ({ sub, name: `User ${sub}`, email: `${sub}@example.test`, email_verified: true }),
  }),
  // A first-party client: the grant is implied, never a consent page.
  loadExistingGrant: async ctx => {
    const { Grant } = ctx.oidc.provider;
    const existing = ctx.oidc.session.grantIdFor(ctx.oidc.client.clientId);
    if (existing) return Grant.find(existing);
    const grant = new Grant({ clientId: ctx.oidc.client.clientId, accountId: ctx.oidc.session.accountId });
    grant.addOIDCScope('openid email profile offline_access');
    await grant.save();
    return grant;
  },
  interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
  features: {
    devInteractions: { enabled: false },
    rpInitiatedLogout: {
      enabled: true,
      logoutSource: async (ctx, form) => {
        ctx.body = page(
          'Sign out',
          `${form}<button type="submit" form="op.logoutForm" name="logout" value="yes">Yes, sign me out</button>`,
        );
      },
      postLogoutSuccessSource: async ctx => {
        ctx.body = page('Signed out', '<p>You are signed out.</p>');
      },
    },
  },
  renderError: async (ctx, out) => {
    ctx.type = 'html';
    ctx.body = page('Error', `<pre>${escape(JSON.stringify(out))}</pre>`);
  },
};

async function formBody(req) {
  let text = '';
  for await (const chunk of req) text += chunk;
  return new URLSearchParams(text);
}

/** The sign-in page (GET) and its answer (POST): the user name is the account. */
async function interaction(provider, req, res) {
  const details = await provider.interactionDetails(req, res);
  if (req.method === 'POST') {
    const user = ((await formBody(req)).get('username') ?? '').trim();
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(user)) {
      res.writeHead(400, { 'content-type': 'text/html' }).end(page('Sign in', '<p>Bad user name.</p>'));
      return;
    }
    await provider.interactionFinished(req, res, { login: { accountId: user } }, { mergeWithLastSubmission: false });
    return;
  }
  const form =
    `<form method="post" action="/interaction/${escape(details.uid)}">` +
    '<label>User name <input name="username" autocomplete="username" required autofocus></label>' +
    '<button type="submit">Sign in</button></form>';
  res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(page('Sign in to the test provider', form));
}

const server = createServer();
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, configuration);
  const callback = provider.callback();
  server.on('request', (req, res) => {
    if (req.url?.startsWith('/interaction/')) {
      interaction(provider, req, res).catch(error => {
        res.writeHead(500, { 'content-type': 'text/plain' }).end(String(error));
      });
    } else {
      callback(req, res);
    }
  });
  process.stdout.write(`${JSON.stringify({ issuer })}\n`);
});
