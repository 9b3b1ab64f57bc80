import { generateKeyPairSync, randomBytes } from 'node:crypto';
import type { Server } from 'node:http';
import Provider from 'oidc-provider';

export interface OidcAccount {
  email: string;
  emailVerified: boolean;
  /** The email claims go in this account's ID token, and its UserInfo leaves them out (else the other way round). */
  inIdToken?: boolean;
}

export interface TestOidcProvider {
  issuer: string;
  clientId: string;
  clientSecret: string;
  /** Starts listening (on the port of `issuer`), once; the provider can be started after the service. */
  listen(): Promise<void>;
  /** Stops listening (it can listen again, its state kept). */
  close(): Promise<void>;
  /** The logins whose claims the UserInfo endpoint has answered, in order. */
  userinfoAnswered: string[];
  /** Every request the provider has received, as `METHOD /path`, in order (`POST /token`: a code redeemed or refused). */
  requests: string[];
}

/**
 * A real OpenID provider (the `oidc-provider` package, certified), in this process, for the console's sign-in
 * tests: one confidential client (client_secret_basic) with the given redirect URI and post-logout redirect
 * URI (RP-Initiated Logout, which the provider advertises as `end_session_endpoint`), PKCE (S256) required,
 * and its development login page, where the login typed is the account id. `accounts` gives each login its
 * email claims; any other login has none. Consent is taken as given (one screen less to drive). An account's
 * email claims are in its UserInfo only (OpenID Connect Core 5.4, what most providers do when they issue an
 * access token), so the service has to read them there, or with `inIdToken` in its ID token only (as Google
 * or Keycloak do), so the service has to take them from there. On Node 20 the package prints "Unsupported
 * runtime" once when loaded (it asks for Node 22 LTS); it runs all the same.
 */
export function oidcProvider(opts: {
  port: number;
  host?: string;
  redirectUri: string;
  postLogoutRedirectUri: string;
  accounts: Record<string, OidcAccount>;
}): TestOidcProvider {
  const issuer = `http://${opts.host ?? '127.0.0.1'}:${opts.port}`;
  const clientId = 'billing-console';
  const clientSecret = randomBytes(24).toString('base64url');
  const userinfoAnswered: string[] = [];
  const requests: string[] = [];
  const signingKey = { ...generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'jwk' }), kid: 'test', use: 'sig', alg: 'RS256' };
  const provider = quietly(() => new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        redirect_uris: [opts.redirectUri],
        post_logout_redirect_uris: [opts.postLogoutRedirectUri],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
      },
    ],
    jwks: { keys: [signingKey as never] },
    cookies: { keys: [randomBytes(16).toString('hex')] },
    claims: { openid: ['sub'], email: ['email', 'email_verified'] },
    // Scope claims may go in the ID token; claims() below decides, per account, where they go.
    conformIdTokenClaims: false,
    pkce: { required: () => true },
    ttl: { AccessToken: 600, IdToken: 600, Interaction: 600, Session: 3600, Grant: 3600, AuthorizationCode: 60 },
    features: { devInteractions: { enabled: true } },
    async findAccount(_ctx, id) {
      const account = opts.accounts[id];
      return {
        accountId: id,
        claims: async (use: string) => {
          if (use === 'userinfo') userinfoAnswered.push(id);
          const here = account && (use === 'id_token') === (account.inIdToken === true);
          return here ? { sub: id, email: account.email, email_verified: account.emailVerified } : { sub: id };
        },
      };
    },
    async loadExistingGrant(ctx) {
      const grant = new ctx.oidc.provider.Grant({ clientId: ctx.oidc.client!.clientId, accountId: ctx.oidc.session!.accountId });
      grant.addOIDCScope('openid email');
      await grant.save();
      return grant;
    },
  }));
  provider.use(async (ctx, next) => {
    requests.push(`${ctx.method} ${ctx.path}`);
    await next();
  });
  let server: Server | undefined;
  return {
    issuer,
    clientId,
    clientSecret,
    userinfoAnswered,
    requests,
    listen: () =>
      new Promise<void>((resolve, reject) => {
        if (server) return resolve();
        server = provider.listen(opts.port, opts.host ?? '127.0.0.1', () => resolve());
        server.once('error', reject);
      }),
    close: () =>
      new Promise<void>((resolve) => {
        if (!server) return resolve();
        const closing = server;
        server = undefined;
        closing.closeAllConnections();
        closing.close(() => resolve());
      }),
  };
}

/**
 * Builds the provider without its two warnings that a test provider is meant to earn (its in-memory store and
 * its development login page); any other warning is printed.
 */
function quietly<T>(build: () => T): T {
  const warn = console.warn;
  console.warn = (message: unknown, ...rest: unknown[]) => {
    if (typeof message === 'string' && /oidc-provider WARNING: a quick start development-only (in-memory adapter|feature devInteractions)/.test(message)) return;
    warn(message, ...rest);
  };
  try {
    return build();
  } finally {
    console.warn = warn;
  }
}
