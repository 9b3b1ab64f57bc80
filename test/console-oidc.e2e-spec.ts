import { INestApplication } from '@nestjs/common';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import pino from 'pino';
import type { Browser, Page, Request as BrowserRequest } from 'playwright-core';
import { DataSource } from 'typeorm';
import { createApp } from '../src/app.factory';
import { ConsoleAuthService } from '../src/console/console-auth.service';
import { launchChromium } from './support/browser';
import { createTestDatabase } from './support/databases';
import { freePort } from './support/free-port';
import { oidcProvider, TestOidcProvider } from './support/oidc-provider';
import { testConfig } from './support/test-app';
import { waitFor } from './support/wait-for';

jest.setTimeout(120_000);

const AXE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

/**
 * The console's sign-in through the company's OpenID provider (spec §14, CONSOLE_OIDC_*), in Chromium, against
 * a real provider (oidc-provider) on another site (127.0.0.1 while the console is on localhost, so that
 * SameSite works as it would in production): the authorization code flow with PKCE through the provider's
 * own login page. The service starts while the provider is down and signs in once it is up; only a verified
 * email at an allowed domain (from UserInfo, or from the ID token when it carries one) gets a session; the
 * start writes nothing; a forged, tampered or expired handle is refused before the provider is asked; a
 * replayed callback is refused by the provider (its code is single use) and gets nothing; the API does not
 * accept the session; signing out ends the provider's session too (RP-Initiated Logout); one-time links
 * still work.
 */
describe('console sign-in through an OpenID provider', () => {
  let browser: Browser | undefined;
  let app: INestApplication | undefined;
  let idp: TestOidcProvider;
  let db: DataSource;
  let drop: (() => Promise<void>) | undefined;
  let origin: string;
  const logLines: string[] = [];

  beforeAll(async () => {
    browser = await launchChromium();
    if (!browser) return;
    const database = await createTestDatabase();
    drop = database.drop;
    const [appPort, idpPort] = [await freePort(), await freePort()];
    origin = `http://localhost:${appPort}`;
    idp = oidcProvider({
      port: idpPort,
      redirectUri: `${origin}/console/oidc/callback`,
      postLogoutRedirectUri: `${origin}/console/sign-in`,
      accounts: {
        alice: { email: 'alice@example.com', emailVerified: true },
        dana: { email: 'Dana@OPS.Example.org', emailVerified: true },
        carol: { email: 'carol@example.com', emailVerified: false },
        mallory: { email: 'mallory@evil-example.com', emailVerified: true },
        eve: { email: 'eve@example.com.evil.io', emailVerified: true },
        // Their email claims are in the ID token only, and their UserInfo answers none.
        frank: { email: 'frank@example.com', emailVerified: true, inIdToken: true },
        grace: { email: 'grace@example.com', emailVerified: false, inIdToken: true },
      },
    });
    // The provider is not listening yet: the start must not wait for it, nor fail.
    app = await createApp(
      testConfig(database.url, {
        PUBLIC_URL: origin,
        CONSOLE_OIDC_ISSUER: idp.issuer,
        CONSOLE_OIDC_CLIENT_ID: idp.clientId,
        CONSOLE_OIDC_CLIENT_SECRET: idp.clientSecret,
        CONSOLE_OIDC_ALLOWED_DOMAINS: 'example.com, Ops.Example.org',
      }),
      pino({ level: 'warn' }, { write: (line: string) => void logLines.push(line) }),
    );
    await app.listen(appPort, '127.0.0.1');
    db = app.get(DataSource);
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await idp?.close();
    await drop?.();
  });

  const get = (path: string, headers: Record<string, string> = {}) => fetch(`${origin}${path}`, { headers, redirect: 'manual' });
  const count = async (sql: string, params: unknown[] = []) => ((await db.query(sql, params)) as { n: number }[])[0].n;
  const sessions = (email: string) => count(`SELECT count(*)::int AS n FROM console_sessions WHERE email = $1`, [email]);
  const tokenRequests = () => idp.requests.filter((r) => r === 'POST /token').length;
  /** State, nonce and code verifier of a handle, derived as the service does (console-oidc.service.ts). */
  const derived = (label: string, handle: string) => createHash('sha256').update(`console-oidc-${label}:${handle}`).digest('base64url');

  interface Attempt {
    page: Page;
    problems: string[];
    /** The callback as the provider sent the browser to it, with the browser's cookies then. */
    callback: { url: string; cookie: string };
    /** The status the console answered the callback with. */
    status: number;
  }

  /**
   * A new browser (no cookies) signs in as `login` on the provider's login page. Resolves once the console
   * has answered the callback.
   */
  async function signInAs(login: string): Promise<Attempt> {
    await idp.listen();
    const context = await browser!.newContext();
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('console', (msg) => {
      if (/Content Security Policy|Refused to/i.test(msg.text())) problems.push(msg.text());
    });
    page.on('pageerror', (err) => problems.push(err.message));
    let callback: Attempt['callback'] | undefined;
    const answered = page.waitForResponse((res) => res.url().includes('/console/oidc/callback'));
    page.on('request', (req: BrowserRequest) => {
      if (req.url().includes('/console/oidc/callback')) void req.allHeaders().then((h) => (callback ??= { url: req.url(), cookie: h.cookie ?? '' }));
    });
    await page.goto(`${origin}/console/sign-in`);
    await page.getByRole('link', { name: `Sign in with ${new URL(idp.issuer).host}` }).click();
    await page.locator('input[name="login"]').fill(login);
    await page.locator('input[name="password"]').fill('any password');
    await page.locator('button[type="submit"]').click();
    const status = (await answered).status();
    await waitFor('the callback request', () => callback);
    return { page, problems, callback: callback!, status };
  }

  it('starts while the provider is down, answers 503 on the button, and signs in once the provider is up', async () => {
    if (!browser) return; // no Chromium on this machine (not CI): global setup printed one line saying so
    await waitFor('the start-up discovery warning', () => logLines.some((line) => line.includes('discovery failed')));
    const page = await get('/console/sign-in');
    expect(page.status).toBe(200);
    expect(await page.text()).toContain(`Sign in with ${new URL(idp.issuer).host}`);
    const down = await get('/console/oidc/start');
    expect(down.status).toBe(503);
    expect(await down.text()).toContain('cannot be reached right now');

    // The button on a phone: reachable by keyboard, no serious axe-core violation, nothing wider than the screen.
    const phone = await browser.newPage({ viewport: { width: 375, height: 667 } });
    await phone.goto(`${origin}/console/sign-in`);
    const focused: string[] = [];
    for (let i = 0; i < 3; i++) {
      await phone.keyboard.press('Tab');
      focused.push(await phone.evaluate(() => (globalThis as any).document.activeElement.textContent as string));
    }
    expect(focused).toEqual(['Skip to content', 'Billing console', `Sign in with ${new URL(idp.issuer).host}`]);
    await phone.evaluate(AXE);
    const results = await phone.evaluate(async () => (globalThis as any).axe.run({ resultTypes: ['violations'] }));
    expect((results.violations as { id: string; impact: string }[]).filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id)).toEqual([]);
    expect(await phone.evaluate(() => (globalThis as any).document.documentElement.scrollWidth as number)).toBeLessThanOrEqual(375);
    if (process.env.OIDC_SHOT) await phone.screenshot({ path: process.env.OIDC_SHOT });
    await phone.close();

    await idp.listen();
    const before = await count(`SELECT count(*)::int AS n FROM audit_log WHERE action = 'operator.signed_in'`);
    const { page: browserPage, problems, status } = await signInAs('alice');
    expect(status).toBe(200);
    await browserPage.waitForURL(`${origin}/console`);
    expect(await browserPage.getByRole('heading', { level: 1 }).textContent()).toBe('Overview');
    expect(await browserPage.locator('.who').textContent()).toBe('alice@example.com');
    expect(problems).toEqual([]);

    const [session] = await db.query(`SELECT email, via, expires_at - created_at AS ttl FROM console_sessions WHERE email = 'alice@example.com'`);
    expect(session).toMatchObject({ email: 'alice@example.com', via: 'oidc' });
    const audit = await db.query(`SELECT actor, after FROM audit_log WHERE action = 'operator.signed_in' ORDER BY id`);
    expect(audit.length).toBe(before + 1);
    expect(audit.at(-1)).toEqual({ actor: 'operator:alice@example.com', after: { via: 'oidc' } });
    // The ID token left the email out: the service read it from UserInfo.
    expect(idp.userinfoAnswered).toEqual(['alice']);
    // The browser's handle on the sign-in is gone.
    const cookies = await browserPage.context().cookies([`${origin}/console`, `${origin}/console/oidc/callback`]);
    expect(cookies.map((c) => c.name)).toEqual(['console_session']);
    expect(cookies[0]).toMatchObject({ httpOnly: true, sameSite: 'Strict', path: '/console' });
  });

  it('takes the allowed domains case-insensitively, and signs the operator in under the lower-cased email', async () => {
    if (!browser) return;
    const { page, status } = await signInAs('dana');
    expect(status).toBe(200);
    await page.waitForURL(`${origin}/console`);
    expect(await sessions('dana@ops.example.org')).toBe(1);
  });

  it('refuses an email at a domain not allowed (exactly, not by suffix or likeness), and makes no session', async () => {
    if (!browser) return;
    for (const [login, email] of [
      ['mallory', 'mallory@evil-example.com'],
      ['eve', 'eve@example.com.evil.io'],
    ]) {
      const { page, status } = await signInAs(login);
      expect(status).toBe(403);
      expect(await page.getByRole('alert').textContent()).toContain(`${email} is not at a domain allowed to use the console`);
      expect(await sessions(email)).toBe(0);
      expect(await page.context().cookies([`${origin}/console`, `${origin}/console/oidc/callback`])).toEqual([]);
    }
    expect(await count(`SELECT count(*)::int AS n FROM audit_log WHERE actor LIKE 'operator:%evil%'`)).toBe(0);
  });

  it('refuses an email the provider has not verified', async () => {
    if (!browser) return;
    const { page, status } = await signInAs('carol');
    expect(status).toBe(403);
    expect(await page.getByRole('alert').textContent()).toContain('has not verified the email address carol@example.com');
    expect(await sessions('carol@example.com')).toBe(0);
  });

  // These two over plain HTTP: what they show is the service's reading of the ID token, not the browser's part.
  it('takes the email from the ID token when the provider puts it there, without asking UserInfo', async () => {
    if (!browser) return;
    const { callback, cookie } = await callbackOverHttp('frank');
    const res = await get(callback.pathname + callback.search, { Cookie: cookie });
    expect(res.status).toBe(200);
    const session = /^console_session=[^;]+/.exec(res.headers.getSetCookie().find((c) => c.startsWith('console_session='))!)![0];
    expect(await (await get('/console', { Cookie: session })).text()).toContain('frank@example.com');
    expect(await sessions('frank@example.com')).toBe(1);
    // frank's UserInfo has no email: a service that read it would have refused him.
    expect(idp.userinfoAnswered).not.toContain('frank');
  });

  it('refuses an ID token whose email_verified is false (403), and makes nothing', async () => {
    if (!browser) return;
    const { callback, cookie } = await callbackOverHttp('grace');
    const res = await get(callback.pathname + callback.search, { Cookie: cookie });
    expect(res.status).toBe(403);
    expect(await res.text()).toContain('has not verified the email address grace@example.com');
    expect(res.headers.getSetCookie().some((c) => c.startsWith('console_session='))).toBe(false);
    expect(await sessions('grace@example.com')).toBe(0);
    expect(await count(`SELECT count(*)::int AS n FROM audit_log WHERE actor = 'operator:grace@example.com'`)).toBe(0);
    expect(idp.userinfoAnswered).not.toContain('grace');
  });

  it('refuses a replayed callback, even with the cookie it came with (the provider redeems a code once), and a callback without its sign-in', async () => {
    if (!browser) return;
    const first = await signInAs('alice');
    expect(first.status).toBe(200);
    const before = await sessions('alice@example.com');
    const audited = await count(`SELECT count(*)::int AS n FROM audit_log`);
    const redeemed = tokenRequests();
    // An attacker holding both the callback URL (code and state) and the browser's console_oidc cookie.
    expect(first.callback.cookie).toMatch(/console_oidc=/);
    const replay = await get(new URL(first.callback.url).pathname + new URL(first.callback.url).search, { Cookie: first.callback.cookie });
    expect(replay.status).toBe(400);
    expect(await replay.text()).toContain('expired, already used, or was started in another browser');
    expect(replay.headers.getSetCookie().some((c) => c.startsWith('console_session='))).toBe(false);
    // The handle is good (its MAC, its 10 minutes): the provider was asked, and refused the used code (invalid_grant).
    expect(tokenRequests()).toBe(redeemed + 1);
    // The same callback from a browser that never started a sign-in.
    const stranger = await get(new URL(first.callback.url).pathname + new URL(first.callback.url).search);
    expect(stranger.status).toBe(400);
    // The refused callbacks are logged (warn) without the provider's code and state, with the query's names.
    const answer = new URL(first.callback.url);
    for (const name of ['code', 'state']) {
      expect(answer.searchParams.get(name)).toBeTruthy();
      expect(logLines.join('\n')).not.toContain(answer.searchParams.get(name));
    }
    const logged = logLines.map((line) => JSON.parse(line)).filter((line) => line.msg === 'request completed').map((line) => line.url);
    expect(logged).toContain(`${answer.pathname}?${[...answer.searchParams.keys()].map((name) => `${name}=`).join('&')}`);
    expect(await sessions('alice@example.com')).toBe(before);
    expect(await count(`SELECT count(*)::int AS n FROM audit_log`)).toBe(audited);
  });

  it('starts a sign-in without writing to the database (the start is public)', async () => {
    if (!browser) return;
    await idp.listen();
    const tables: { name: string }[] = await db.query(`SELECT format('%I.%I', schemaname, tablename) AS name FROM pg_tables WHERE schemaname = 'public'`);
    const rows = async () => Object.fromEntries(await Promise.all(tables.map(async ({ name }) => [name, await count(`SELECT count(*)::int AS n FROM ${name}`)])));
    const before = await rows();
    const handles = new Set<string>();
    for (let i = 0; i < 20; i++) {
      const start = await get('/console/oidc/start');
      expect(start.status).toBe(303);
      handles.add(/^console_oidc=([^;]+)/.exec(start.headers.getSetCookie()[0])![1]);
    }
    expect(handles.size).toBe(20);
    expect(await rows()).toEqual(before);
  });

  /**
   * The same sign-in over plain HTTP, with a cookie jar per site, up to the provider's redirect to the console
   * (a browser cannot be made to change a redirect's target): the callback URL and the console_oidc cookie.
   */
  async function callbackOverHttp(login: string, opts: { cancel?: boolean; handle?: string } = {}): Promise<{ callback: URL; cookie: string }> {
    await idp.listen();
    const jar = new Map<string, string>();
    const remember = (res: Response) => {
      for (const line of res.headers.getSetCookie()) {
        const [pair] = line.split(';');
        const at = pair.indexOf('=');
        jar.set(pair.slice(0, at), pair.slice(at + 1));
      }
    };
    const cookies = () => [...jar].map(([name, value]) => `${name}=${value}`).join('; ');
    const start = await get('/console/oidc/start');
    expect(start.status).toBe(303);
    let cookie = /^(console_oidc=[^;]+)/.exec(start.headers.getSetCookie().find((c) => c.startsWith('console_oidc='))!)![1];
    let url = new URL(start.headers.get('location')!);
    if (opts.handle) {
      // A handle of the client's own making, and the authorization request that follows from it as the
      // service would build it (how state, nonce and verifier are derived is no secret).
      cookie = `console_oidc=${opts.handle}`;
      url.searchParams.set('state', derived('state', opts.handle));
      url.searchParams.set('nonce', derived('nonce', opts.handle));
      url.searchParams.set('code_challenge', createHash('sha256').update(derived('verifier', opts.handle)).digest('base64url'));
    }
    for (let hop = 0; hop < 10; hop++) {
      if (url.href.startsWith(`${origin}/console/oidc/callback`)) return { callback: url, cookie };
      let res = await fetch(url, { headers: { Cookie: cookies() }, redirect: 'manual' });
      remember(res);
      if (res.status === 200) {
        // The provider's login page: submit its form as a person would, or press its Cancel.
        const html = await res.text();
        if (opts.cancel) {
          res = await fetch(new URL(/href="([^"]+\/abort)"/.exec(html)![1], url), { headers: { Cookie: cookies() }, redirect: 'manual' });
        } else {
          const action = /<form[^>]*action="([^"]+)"/.exec(html)![1].replace(/&amp;/g, '&');
          res = await fetch(new URL(action, url), {
            method: 'POST',
            headers: { Cookie: cookies(), 'Content-Type': 'application/x-www-form-urlencoded' },
            body: new URLSearchParams({ prompt: 'login', login, password: 'any password' }),
            redirect: 'manual',
          });
        }
        remember(res);
      }
      expect([302, 303]).toContain(res.status);
      url = new URL(res.headers.get('location')!, url);
    }
    throw new Error('the provider did not send the browser back to the console');
  }

  it('refuses a callback whose state is not its sign-in’s, and clears the handle, so the real answer after it is refused too', async () => {
    if (!browser) return;
    const before = await sessions('alice@example.com');
    const { callback, cookie } = await callbackOverHttp('alice');
    expect(callback.searchParams.get('code')).toBeTruthy();
    const forged = new URL(callback);
    forged.searchParams.set('state', 'forged-state-value');
    const refused = await get(forged.pathname + forged.search, { Cookie: cookie });
    expect(refused.status).toBe(400);
    expect(await refused.text()).toContain('does not match this sign-in');
    expect(refused.headers.getSetCookie()).toEqual([expect.stringMatching(/^console_oidc=; Path=\/console\/oidc; Expires=Thu, 01 Jan 1970/)]);
    // The browser's next request to the callback, the real answer, comes without the handle.
    const real = await get(callback.pathname + callback.search);
    expect(real.status).toBe(400);
    expect(await real.text()).toContain('expired, already used, or was started in another browser');
    expect(await sessions('alice@example.com')).toBe(before);
  });

  it('refuses a callback carrying another sign-in’s answer (a code injected into this browser)', async () => {
    if (!browser) return;
    const before = await sessions('alice@example.com');
    const theirs = await callbackOverHttp('alice');
    const mine = await callbackOverHttp('alice');
    const injected = await get(theirs.callback.pathname + theirs.callback.search, { Cookie: mine.cookie });
    expect(injected.status).toBe(400);
    expect(await injected.text()).toContain('does not match this sign-in');
    expect(await sessions('alice@example.com')).toBe(before);
  });

  it('refuses a forged or tampered handle (good shape, wrong MAC) before asking the provider, and makes nothing', async () => {
    if (!browser) return;
    const before = await sessions('alice@example.com');
    const genuine = /^console_oidc=(.+)$/.exec((await callbackOverHttp('alice')).cookie)![1];
    const [issuedAt, random, mac] = genuine.split('.');
    const handles = {
      forged: `${issuedAt}.${randomBytes(32).toString('base64url')}.${randomBytes(32).toString('base64url')}`,
      // A genuine handle's MAC on another issue time (how an expired handle would be made young again).
      tampered: `${Number(issuedAt) + 1}.${random}.${mac}`,
    };
    for (const [what, handle] of Object.entries(handles)) {
      // The provider signs alice in and sends back a code for this handle's state and code challenge.
      const { callback, cookie } = await callbackOverHttp('alice', { handle });
      expect(callback.searchParams.get('state')).toBe(derived('state', handle));
      const asked = idp.requests.length;
      const res = await get(callback.pathname + callback.search, { Cookie: cookie });
      expect([what, res.status]).toEqual([what, 400]);
      expect(await res.text()).toContain('expired, already used, or was started in another browser');
      expect(idp.requests.slice(asked)).toEqual([]);
    }
    expect(await sessions('alice@example.com')).toBe(before);
  });

  it('refuses a sign-in older than 10 minutes before asking the provider (the clock moved, not slept)', async () => {
    if (!browser) return;
    const before = await sessions('alice@example.com');
    const { callback, cookie } = await callbackOverHttp('alice');
    const asked = idp.requests.length;
    const realNow = Date.now.bind(Date);
    const clock = jest.spyOn(Date, 'now').mockImplementation(() => realNow() + 10 * 60_000 + 1_000);
    try {
      const res = await get(callback.pathname + callback.search, { Cookie: cookie });
      expect(res.status).toBe(400);
      expect(await res.text()).toContain('expired, already used');
    } finally {
      clock.mockRestore();
    }
    expect(idp.requests.slice(asked)).toEqual([]);
    expect(await sessions('alice@example.com')).toBe(before);
    // The clock back: the same callback signs in, so the 10 minutes were all that refused it (and it used nothing up).
    expect((await get(callback.pathname + callback.search, { Cookie: cookie })).status).toBe(200);
    expect(await sessions('alice@example.com')).toBe(before + 1);
  });

  it('answers 503 when the provider goes away between the sign-in and its callback, and makes nothing', async () => {
    if (!browser) return;
    const before = await count(`SELECT count(*)::int AS n FROM console_sessions`);
    const { callback, cookie } = await callbackOverHttp('alice');
    await idp.close();
    try {
      const res = await get(callback.pathname + callback.search, { Cookie: cookie });
      expect(res.status).toBe(503);
      expect(await res.text()).toContain('cannot be reached right now');
    } finally {
      await idp.listen();
    }
    expect(await count(`SELECT count(*)::int AS n FROM console_sessions`)).toBe(before);
  });

  it('says so when the operator cancels at the provider, and makes nothing', async () => {
    if (!browser) return;
    const before = await count(`SELECT count(*)::int AS n FROM console_sessions`);
    const { callback, cookie } = await callbackOverHttp('alice', { cancel: true });
    expect(callback.searchParams.get('error')).toBe('access_denied');
    const res = await get(callback.pathname + callback.search, { Cookie: cookie });
    expect(res.status).toBe(400);
    expect(await res.text()).toContain('The OpenID provider did not sign you in (access_denied)');
    expect(await count(`SELECT count(*)::int AS n FROM console_sessions`)).toBe(before);
  });

  it('does not accept an OpenID console session on the API', async () => {
    if (!browser) return;
    const { page } = await signInAs('alice');
    await page.waitForURL(`${origin}/console`);
    const [cookie] = await page.context().cookies(`${origin}/console`);
    expect(cookie.name).toBe('console_session');
    const attempts: Record<string, string>[] = [{ Cookie: `console_session=${cookie.value}` }, { Cookie: `session=${cookie.value}` }, { Authorization: `Bearer ${cookie.value}` }];
    for (const headers of attempts) {
      expect((await get('/api/me', headers)).status).toBe(401);
    }
    expect((await get('/console', { Cookie: `console_session=${cookie.value}` })).status).toBe(200);
  });

  it('signs out at the provider too: the console session is revoked and the next sign-in asks for the login again', async () => {
    if (!browser) return;
    const button = `Sign in with ${new URL(idp.issuer).host}`;
    const { page, problems } = await signInAs('alice');
    await page.waitForURL(`${origin}/console`);
    // While the provider's session lasts, signing in again asks nothing: the provider sends the browser straight back.
    await page.goto(`${origin}/console/sign-in`);
    await page.getByRole('link', { name: button }).click();
    await page.waitForURL(`${origin}/console`);
    const [cookie] = await page.context().cookies(`${origin}/console`);
    const live = () => count(`SELECT count(*)::int AS n FROM console_sessions WHERE token_hash = sha256(convert_to($1, 'UTF8'))`, [cookie.value]);
    expect(await live()).toBe(1);
    const audited = await count(`SELECT count(*)::int AS n FROM audit_log`);

    const endSession: string[] = [];
    page.on('request', (req) => {
      if (req.url().startsWith(`${idp.issuer}/session/end?`)) endSession.push(req.url());
    });
    await page.getByRole('button', { name: 'Sign out' }).click();
    // The provider asks whether to sign out there too (the request carries no id_token_hint).
    await page.getByRole('button', { name: 'Yes, sign me out' }).click();
    await page.waitForURL(`${origin}/console/sign-in`);
    expect(problems).toEqual([]);
    // The console session ended here before the browser left for the provider.
    expect(await live()).toBe(0);
    expect((await get('/console', { Cookie: `console_session=${cookie.value}` })).status).toBe(303);
    expect(await page.context().cookies(`${origin}/console`)).toEqual([]);
    expect(await count(`SELECT count(*)::int AS n FROM audit_log`)).toBe(audited); // as a link's sign-out: nothing
    const params = Object.fromEntries(new URL(endSession[0]).searchParams);
    expect(params).toEqual({ client_id: idp.clientId, post_logout_redirect_uri: `${origin}/console/sign-in` });

    // The provider's session is gone: the next sign-in asks for the login again.
    await page.getByRole('link', { name: button }).click();
    await page.locator('input[name="login"]').waitFor();
    expect(page.url().startsWith(idp.issuer)).toBe(true);
  });

  it('still signs in by one-time link (the CLI holder’s way in when the provider is down)', async () => {
    if (!browser) return;
    const { url } = await app!.get(ConsoleAuthService).createLink('oncall@example.net', 15);
    const token = new URL(url).searchParams.get('token')!;
    const res = await fetch(`${origin}/console/sign-in/link`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: origin },
      body: new URLSearchParams({ token }),
      redirect: 'manual',
    });
    expect(res.status).toBe(303);
    expect(await sessions('oncall@example.net')).toBe(1);

    // Its sign-out stays here: the provider's end-session endpoint is for sessions made through it.
    const cookie = /^console_session=[^;]+/.exec(res.headers.getSetCookie()[0])![0];
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await (await get('/console', { Cookie: cookie })).text())![1];
    const out = await fetch(`${origin}/console/sign-out`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded', Origin: origin, Cookie: cookie },
      body: new URLSearchParams({ _csrf: csrf }),
      redirect: 'manual',
    });
    expect(out.status).toBe(303);
    expect(out.headers.get('location')).toBe('/console/sign-in');
    expect(await sessions('oncall@example.net')).toBe(0);
  });
});
