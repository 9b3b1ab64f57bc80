import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../src/config/app-config';
import * as openid from 'openid-client';
import { endSessionUrl, operatorEmail } from '../src/console/console-oidc.service';
import { OidcRefused } from '../src/console/oidc-errors';

const base = () => ({ DATA_DIR: mkdtempSync(join(tmpdir(), 'billing-config-')), PAYPROVIDER_WEBHOOK_SECRET: 'whsec_x' });
const oidc = {
  CONSOLE_OIDC_ISSUER: 'https://login.example.com/realms/staff',
  CONSOLE_OIDC_CLIENT_ID: 'billing-console',
  CONSOLE_OIDC_CLIENT_SECRET: 'hunter2-client-secret',
  CONSOLE_OIDC_ALLOWED_DOMAINS: 'example.com, Ops.Example.ORG,example.com',
};
const refusal = (env: Record<string, string>) => {
  try {
    loadConfig({ ...base(), ...env });
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as Error).message;
  }
  throw new Error('the configuration was accepted');
};

describe('loadConfig: CONSOLE_OIDC_*', () => {
  it('is off by default: the console signs in by one-time links', () => {
    expect(loadConfig(base()).consoleOidc).toBeUndefined();
  });

  it('reads the four settings, the allowed domains lower-cased and once each', () => {
    expect(loadConfig({ ...base(), ...oidc }).consoleOidc).toEqual({
      issuer: new URL('https://login.example.com/realms/staff'),
      clientId: 'billing-console',
      clientSecret: 'hunter2-client-secret',
      allowedDomains: ['example.com', 'ops.example.org'],
    });
  });

  it('in production needs PUBLIC_URL, where the provider sends operators back', () => {
    const production = {
      ...oidc,
      NODE_ENV: 'production',
      PAYPROVIDER_SANDBOX: 'true',
      DATABASE_URL: 'postgres://app@db:5432/billing',
      PAYPROVIDER_WEBHOOK_SECRET: 'whsec_a_production_secret',
    };
    expect(refusal(production)).toContain('PUBLIC_URL is required with CONSOLE_OIDC_ISSUER when NODE_ENV=production');
    expect(loadConfig({ ...base(), ...production, PUBLIC_URL: 'https://billing.example.com' }).consoleOidc).toBeDefined();
    expect(loadConfig({ ...base(), ...oidc }).publicUrl).toBeUndefined();
  });

  it.each(['CONSOLE_OIDC_ISSUER', 'CONSOLE_OIDC_CLIENT_ID', 'CONSOLE_OIDC_CLIENT_SECRET', 'CONSOLE_OIDC_ALLOWED_DOMAINS'])(
    'stops when %s is missing and the others are set, naming it (all four or none)',
    (missing) => {
      const message = refusal({ ...oidc, [missing]: '' });
      expect(message).toContain(`${missing} is required`);
      expect(message).not.toContain('hunter2');
    },
  );

  it('names every missing one when only one is set', () => {
    expect(refusal({ CONSOLE_OIDC_CLIENT_ID: 'x' })).toMatch(/^CONSOLE_OIDC_ISSUER, CONSOLE_OIDC_CLIENT_SECRET, CONSOLE_OIDC_ALLOWED_DOMAINS are required with CONSOLE_OIDC_CLIENT_ID/);
  });

  it.each(['http://login.example.com', 'not a url', 'ftp://login.example.com', 'https://login.example.com/?x=1', 'https://u:p@login.example.com'])(
    'stops on CONSOLE_OIDC_ISSUER=%s: https only',
    (issuer) => {
      expect(refusal({ ...oidc, CONSOLE_OIDC_ISSUER: issuer })).toMatch(/^CONSOLE_OIDC_ISSUER must be an https URL \(http only for localhost or 127\.0\.0\.1\)/);
    },
  );

  it.each(['http://localhost:8080', 'http://127.0.0.1:9000/issuer', 'http://[::1]:9000'])('accepts the development issuer %s', (issuer) => {
    expect(loadConfig({ ...base(), ...oidc, CONSOLE_OIDC_ISSUER: issuer }).consoleOidc?.issuer.href).toBe(new URL(issuer).href);
  });

  it.each(['@example.com', 'ops@example.com', 'example', '*.example.com', 'https://example.com', '.example.com', 'exa mple.com'])(
    'stops on an allowed domain that is not one: %s',
    (domain) => {
      expect(refusal({ ...oidc, CONSOLE_OIDC_ALLOWED_DOMAINS: `example.com,${domain}` })).toBe(
        `CONSOLE_OIDC_ALLOWED_DOMAINS must list email domains such as example.com, got "${domain}"`,
      );
    },
  );
});

describe('operatorEmail: who an ID token may sign in', () => {
  const settings = { allowedDomains: ['example.com', 'ops.example.org'] };
  const claims = (email: unknown, ...verified: unknown[]) => ({ sub: 's', email, email_verified: verified.length ? verified[0] : true });

  it('accepts a verified email at an allowed domain exactly, lower-cased', () => {
    expect(operatorEmail(claims('Alice@Example.COM'), settings)).toBe('alice@example.com');
    expect(operatorEmail(claims('bob@ops.example.org'), settings)).toBe('bob@ops.example.org');
  });

  it.each([
    ['a suffix lookalike', 'mallory@evil-example.com'],
    ['a subdomain', 'mallory@sub.example.com'],
    ['an allowed domain as a prefix', 'mallory@example.com.evil.io'],
    ['two @', 'mallory@evil.io@example.com'],
    ['no email', undefined],
    ['an empty local part', '@example.com'],
    ['a number', 42],
  ])('refuses %s (403)', (_what, email) => {
    expect(() => operatorEmail(claims(email), settings)).toThrow(OidcRefused);
    try {
      operatorEmail(claims(email), settings);
    } catch (err) {
      expect((err as OidcRefused).status).toBe(403);
    }
  });

  it.each([false, 'true', undefined])('refuses an email whose email_verified is %p', (verified) => {
    expect(() => operatorEmail(claims('alice@example.com', verified), settings)).toThrow(/has not verified the email address alice@example.com/);
  });
});

describe('endSessionUrl: where signing out of an OpenID console session sends the browser', () => {
  const provider = (metadata: Partial<openid.ServerMetadata> = {}) =>
    new openid.Configuration({ issuer: 'https://login.example.com', token_endpoint: 'https://login.example.com/token', ...metadata }, 'billing-console', 'hunter2');
  const back = 'https://billing.example.com/console/sign-in';

  it('is none when the provider advertises no end_session_endpoint (the sign-in page, as before)', () => {
    expect(endSessionUrl(provider(), back)).toBeUndefined();
  });

  it('is the end_session_endpoint with client_id and post_logout_redirect_uri, and no id_token_hint', () => {
    const url = new URL(endSessionUrl(provider({ end_session_endpoint: 'https://login.example.com/logout?tenant=staff' }), back)!);
    expect(url.origin + url.pathname).toBe('https://login.example.com/logout');
    expect(Object.fromEntries(url.searchParams)).toEqual({ tenant: 'staff', client_id: 'billing-console', post_logout_redirect_uri: back });
  });
});
