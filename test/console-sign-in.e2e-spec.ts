import { cli } from './support/run-cli';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';

/**
 * The operator console's sign-in (spec §14): one-time links from `console:link`, the `console_session`
 * cookie, CSRF tokens on POSTs, and that console and API credentials never stand for each other.
 */
describe('console sign-in', () => {
  let t: TestApp;
  const logLines: string[] = [];

  beforeAll(async () => {
    t = await startTestApp({ logLines, env: { SERVICE_API_KEYS: 'webapp:console-test-key' } });
  });
  afterAll(() => t.close());

  const link = async (email: string, ...more: string[]) => {
    const res = await cli(['console:link', '--email', email, ...more], {}, { app: t.app });
    expect(res.code).toBe(0);
    return res.json as { url: string; email: string; expires_at: string };
  };
  const tokenOf = (url: string) => new URL(url).searchParams.get('token')!;

  /** Redeems a link as the browser's form does: the session cookie's value. */
  async function signIn(email = 'ops@example.com'): Promise<string> {
    const { url } = await link(email);
    const res = await t.http().post('/console/sign-in/link').type('form').send({ token: tokenOf(url) }).expect(303);
    expect(res.headers.location).toBe('/console');
    return /console_session=([^;]+)/.exec(res.headers['set-cookie'][0])![1];
  }
  const csrfOf = (html: string) => /name="_csrf" value="([^"]+)"/.exec(html)![1];

  it('prints a one-time URL that expires in 15 minutes by default, storing only its hash', async () => {
    const before = Date.now();
    const made = await link('ops@example.com');
    expect(made.url).toMatch(/^http:\/\/localhost:\d+\/console\/sign-in\/link\?token=[A-Za-z0-9_-]{43}$/);
    const minutes = (Date.parse(made.expires_at) - before) / 60_000;
    expect(minutes).toBeGreaterThan(14.9);
    expect(minutes).toBeLessThan(15.1);
    const longer = await link('ops@example.com', '--ttl-minutes', '60');
    expect((Date.parse(longer.expires_at) - before) / 60_000).toBeGreaterThan(59.9);
    const stored = await t.db.query(`SELECT encode(token_hash, 'hex') AS hash, email FROM console_sign_in_links`);
    expect(JSON.stringify(stored)).not.toContain(tokenOf(made.url));
    expect(stored.map((r: { hash: string }) => r.hash)).toContain(require('node:crypto').createHash('sha256').update(tokenOf(made.url)).digest('hex'));
  });

  it('refuses bad flags with a usage error', async () => {
    for (const args of [[], ['--email', 'not-an-email'], ['--email', 'a@b.co', '--ttl-minutes', '0'], ['--email', 'a@b.co', '--ttl-minutes', 'x']]) {
      const res = await cli(['console:link', ...args], {}, { app: t.app });
      expect(res.code).toBe(2);
    }
  });

  it('shows a button for the link (a GET does not use it up), and the POST sets console_session for 12 hours', async () => {
    const { url } = await link('ops@example.com');
    const page = await t.http().get(`/console/sign-in/link?token=${tokenOf(url)}`).expect(200);
    expect(page.text).toContain('<button type="submit" class="primary">Sign in</button>');
    await t.http().get(`/console/sign-in/link?token=${tokenOf(url)}`).expect(200);
    const res = await t.http().post('/console/sign-in/link').type('form').send({ token: tokenOf(url) }).expect(303);
    const cookie: string = res.headers['set-cookie'][0];
    expect(cookie).toMatch(/^console_session=[A-Za-z0-9_-]{43}; Max-Age=43200; Path=\/console; Expires=[^;]+; HttpOnly; SameSite=Strict$/);
    const session = /console_session=([^;]+)/.exec(cookie)![1];
    const overview = await t.http().get('/console').set('Cookie', `console_session=${session}`).expect(200);
    expect(overview.text).toContain('ops@example.com');
    expect(overview.headers['content-security-policy']).toContain("script-src 'self'");
    expect(overview.headers['content-security-policy']).not.toContain('unsafe-inline');
    const [signedIn] = await t.db.query(`SELECT actor, action FROM audit_log WHERE action = 'operator.signed_in' ORDER BY id DESC LIMIT 1`);
    expect(signedIn).toEqual({ actor: 'operator:ops@example.com', action: 'operator.signed_in' });
  });

  it('marks the cookie Secure when PUBLIC_URL is https', async () => {
    const https = await startTestApp({ env: { PUBLIC_URL: 'https://billing.example.com' } });
    try {
      const made = await cli(['console:link', '--email', 'ops@example.com'], {}, { app: https.app });
      expect(made.json.url).toMatch(/^https:\/\/billing\.example\.com\/console\/sign-in\/link\?token=/);
      const res = await https.http().post('/console/sign-in/link').type('form').send({ token: tokenOf(made.json.url) }).expect(303);
      expect(res.headers['set-cookie'][0]).toMatch(/; Secure; SameSite=Strict$/);
    } finally {
      await https.close();
    }
  });

  it('keeps the link token out of the request log: the path and the query names only, however the path is spelled', async () => {
    const { url } = await link('ops@example.com');
    const token = tokenOf(url);
    const spellings = ['/console/sign-in/link', '/Console/Sign-In/Link/', '/console/sign-in/%6Cink'];
    for (const path of spellings) await t.http().get(`${path}?token=${token}&from=mail`);
    await t.http().post('/console/sign-in/link').type('form').send({ token }).expect(303);
    await t.http().get(`/console/sign-in/link?token=${token}`).expect(200);
    expect(logLines.join('\n')).not.toContain(token);
    const logged = logLines.map((line) => JSON.parse(line)).filter((line) => line.msg === 'request completed').map((line) => line.url);
    for (const path of spellings) expect(logged).toContain(`${path}?token=&from=`);
    // Other routes keep their query in the log.
    await t.http().get('/console/sign-in?next=overview').expect(200);
    expect(logLines.map((line) => JSON.parse(line).url)).toContain('/console/sign-in?next=overview');
  });

  it('refuses a reused, an expired and an unknown link, and signs nobody in', async () => {
    const { url } = await link('ops@example.com');
    await t.http().post('/console/sign-in/link').type('form').send({ token: tokenOf(url) }).expect(303);
    const reused = await t.http().post('/console/sign-in/link').type('form').send({ token: tokenOf(url) }).expect(400);
    expect(reused.text).toContain('expired, already used');
    expect(reused.headers['set-cookie']).toBeUndefined();

    const expired = await link('late@example.com', '--ttl-minutes', '1');
    await t.db.query(`UPDATE console_sign_in_links SET expires_at = now() - interval '1 second' WHERE email = 'late@example.com'`);
    const late = await t.http().post('/console/sign-in/link').type('form').send({ token: tokenOf(expired.url) }).expect(400);
    expect(late.headers['set-cookie']).toBeUndefined();

    for (const token of ['x'.repeat(43), '', '<script>', undefined]) {
      const res = await t.http().post('/console/sign-in/link').type('form').send(token === undefined ? {} : { token }).expect(400);
      expect(res.text).not.toContain('<script>');
    }
    await t.http().get('/console/sign-in/link?token=%3Cb%3E').expect(200).expect((res) => expect(res.text).toContain('&lt;b&gt;'));
    const [{ count }] = await t.db.query(`SELECT count(*)::int AS count FROM console_sessions WHERE email = 'late@example.com'`);
    expect(count).toBe(0);
  });

  it('sends a visitor without a console session to the sign-in page, whatever API credential they carry', async () => {
    const org = await createOrganisation(t, 'Credential Ltd');
    const user = await createUserWithSession(t, { org: org.id, role: 'owner' });
    const attempts = [
      {},
      { Cookie: `session=${user.token}` },
      { Cookie: `console_session=${user.token}` },
      { Authorization: `Bearer ${user.token}` },
      { 'X-Service-Key': 'console-test-key' },
    ];
    for (const headers of attempts) {
      const res = await t.http().get('/console').set(headers).expect(303);
      expect(res.headers.location).toBe('/console/sign-in');
    }
    const page = await t.http().get('/console/sign-in').expect(200);
    expect(page.text).toContain('console:link');
  });

  it('does not accept a console session on the API', async () => {
    const session = await signIn();
    const org = await createOrganisation(t, 'Api Ltd');
    for (const cookie of [`console_session=${session}`, `session=${session}`]) {
      await t.http().get('/api/me').set('Cookie', cookie).expect(401);
      await t.http().get(`/api/licensing/status?organisation_id=${org.id}`).set('Cookie', cookie).expect(401);
    }
    await t.http().get('/api/me').set('Authorization', `Bearer ${session}`).expect(401);
  });

  it('refuses a POST without the CSRF token of its session, and signs out with it', async () => {
    const session = await signIn();
    const other = await signIn('other@example.com');
    const html = (await t.http().get('/console').set('Cookie', `console_session=${session}`).expect(200)).text;
    const otherCsrf = csrfOf((await t.http().get('/console').set('Cookie', `console_session=${other}`).expect(200)).text);
    for (const body of [{}, { _csrf: '' }, { _csrf: 'forged' }, { _csrf: otherCsrf }]) {
      const res = await t.http().post('/console/sign-out').set('Cookie', `console_session=${session}`).type('form').send(body).expect(403);
      expect(res.text).toContain('no valid security token');
    }
    await t.http().get('/console').set('Cookie', `console_session=${session}`).expect(200);
    const out = await t.http().post('/console/sign-out').set('Cookie', `console_session=${session}`).type('form').send({ _csrf: csrfOf(html) }).expect(303);
    expect(out.headers.location).toBe('/console/sign-in');
    await t.http().get('/console').set('Cookie', `console_session=${session}`).expect(303);
  });

  it('serves its stylesheet and scripts itself, and nothing else under assets', async () => {
    const css = await t.http().get('/console/assets/console.css').expect(200);
    expect(css.headers['content-type']).toMatch(/^text\/css/);
    const chart = await t.http().get('/console/assets/chart.umd.min.js').expect(200);
    expect(chart.text).toContain('Chart');
    await t.http().get('/console/assets/..%2F..%2Fpackage.json').expect(404);
    await t.http().get('/console/assets/constructor').expect(404);
  });
});
