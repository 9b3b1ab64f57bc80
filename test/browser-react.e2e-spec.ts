import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { extname, join, normalize, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { Browser, Page } from 'playwright-core';
import { axeViolations, launchChromium } from './support/browser';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';
import { waitFor } from './support/wait-for';

jest.setTimeout(120_000);

const ROOT = join(__dirname, '..');
const EXAMPLE = join(ROOT, 'examples', 'web-app');
const SERVICE_KEY = 'browser-react-test-key';
// Every run saves its screenshots under test-results/ (ignored by git); SCREENSHOTS_DIR=docs/images refreshes
// the README's and the integration guide's.
const IMAGES = process.env.SCREENSHOTS_DIR ? resolve(process.env.SCREENSHOTS_DIR) : join(ROOT, 'test-results', 'screenshots');
const DESKTOP = { width: 1280, height: 900 };
const PHONE = { width: 375, height: 740 };
const TYPES: Record<string, string> = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml' };
/** Amounts as the page writes them: the context's locale is en-US, and Intl writes euros so. */
const euros = (minor: number) => new Intl.NumberFormat('en-US', { style: 'currency', currency: 'EUR' }).format(minor / 100);

/**
 * The drop-in components (packages/react) in Chromium, in the example web app (examples/web-app, built once with
 * Vite and served as static files, as a web app would ship it) against the real service in sandbox mode with the
 * example's tier table: a purchase through the pricing table and the sandbox's checkout, a change through the
 * preview (the first click changes nothing), seats, cancel and resume, a downgrade kept back, a credit pack, a
 * paywall unlocking after an override, the error states, axe-core at 375 and 1280 px, and screenshots of both.
 */
describe('the React components in the example web app', () => {
  let site: Server;
  let appUrl: string;
  let t: TestApp;
  let browser: Browser | undefined;

  beforeAll(async () => {
    const dist = mkdtempSync(join(tmpdir(), 'example-web-app-'));
    // The built app, any other path answering its page (the return URLs /billing/success… are the app's routes).
    site = createServer((req, res) => {
      const path = normalize(decodeURIComponent(new URL(req.url ?? '/', 'http://x').pathname));
      const file = join(dist, path);
      const found = file.startsWith(dist) && existsSync(file) && statSync(file).isFile() ? file : join(dist, 'index.html');
      res.writeHead(200, { 'Content-Type': TYPES[extname(found)] ?? 'application/octet-stream' });
      res.end(readFileSync(found));
    });
    await new Promise<void>((done) => site.listen(0, '127.0.0.1', done));
    appUrl = `http://127.0.0.1:${(site.address() as AddressInfo).port}`;
    browser = await launchChromium();
    if (!browser) return;
    t = await startTestApp({ env: { APP_URL: appUrl, SERVICE_API_KEYS: `tests:${SERVICE_KEY}`, TIERS_FILE: join(EXAMPLE, 'tiers.json') } });
    // Once for the file: Vite builds the example against this service.
    await promisify(execFile)(process.execPath, [join(ROOT, 'node_modules', 'vite', 'bin', 'vite.js'), 'build', '--outDir', dist, '--emptyOutDir', '--logLevel', 'warn'], {
      cwd: EXAMPLE,
      env: { ...process.env, VITE_BILLING_URL: t.baseUrl },
    });
    mkdirSync(IMAGES, { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await new Promise((done) => site?.close(done));
  });

  /** What the service knows of the organisation, read as the web app's owner would. */
  async function state(auth: Record<string, string>, orgId: string) {
    const { subscription } = (await t.http().get('/api/billing/subscription').set(auth).query({ organisation_id: orgId }).expect(200)).body;
    const history = (await t.http().get('/api/billing/history').set(auth).query({ organisation_id: orgId }).expect(200)).body.data;
    return { subscription, paid: history.map((h: { amount_paid: number }) => h.amount_paid) as number[] };
  }

  /** The state once the billing history has `count` paid invoices: they come with the provider's events, after its answer. */
  const stateWithPaid = (auth: Record<string, string>, orgId: string, count: number) =>
    waitFor(`${count} paid invoice(s) in the billing history`, async () => {
      const s = await state(auth, orgId);
      return s.paid.length >= count && s;
    });

  async function open(viewport: { width: number; height: number }, orgId: string, token: string, path: string) {
    const context = await browser!.newContext({ viewport, locale: 'en-US', ...(viewport === PHONE ? { isMobile: true, hasTouch: true } : {}) });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('pageerror', (err) => problems.push(err.message));
    await page.goto(`${appUrl}${path}#org=${orgId}&session=${token}`);
    return { context, page, problems };
  }

  const scrollWidth = (page: Page) => page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth as number);
  const focused = (el: any) => el.ownerDocument.activeElement === el;
  const regainFocus = (page: Page) => page.evaluate(() => (globalThis as any).window.dispatchEvent(new (globalThis as any).Event('focus')));

  it('buys pro in the pricing table, changes to 3 seats of team through the preview, then 5 seats, cancels and resumes, and keeps a downgrade back', async () => {
    if (!browser) return; // no Chromium on this machine (not CI): global setup printed one line saying so
    const orgId = (await createOrganisation(t)).id;
    const owner = await createUserWithSession(t, { org: orgId, role: 'owner' });
    const { context, page, problems } = await open(DESKTOP, orgId, owner.token, '/billing');
    const manager = page.getByRole('region', { name: 'Your plan' });
    const pricing = page.getByRole('region', { name: 'Plans' });

    await pricing.getByRole('button', { name: 'Choose Pro' }).waitFor();
    // The token left the address bar at once.
    expect(page.url()).toBe(`${appUrl}/billing`);
    expect(await manager.getByText('You have no subscription: you are on the free plan.').count()).toBe(1);
    expect(await pricing.getByText('14-day free trial').count()).toBe(1);
    expect(await axeViolations(page)).toEqual([]);
    await page.screenshot({ path: join(IMAGES, 'example-billing.png'), fullPage: true });

    // The keyboard alone reaches "Choose Pro", with a visible focus ring; Enter opens the sandbox's checkout.
    const choosePro = pricing.getByRole('button', { name: 'Choose Pro' });
    for (let i = 0; i < 40 && !(await choosePro.evaluate(focused)); i++) await page.keyboard.press('Tab');
    expect(await choosePro.evaluate(focused)).toBe(true);
    expect(await choosePro.evaluate((el: any) => el.ownerDocument.defaultView.getComputedStyle(el).outlineStyle)).toBe('solid');
    await Promise.all([page.waitForURL(/\/sandbox\/checkout\/cs_/), page.keyboard.press('Enter')]);
    expect(await page.title()).toBe('Subscribe to pro · Sandbox payments');
    await Promise.all([page.waitForURL(new RegExp(`^${appUrl}/billing/success\\?session_id=cs_`)), page.getByRole('button', { name: 'Pay €29.00' }).click()]);
    await page.getByText('Payment received: welcome to your new plan.').waitFor();
    await manager.getByText('Pro', { exact: true }).waitFor();
    expect(await stateWithPaid(owner.auth, orgId, 1)).toMatchObject({ subscription: { tier: 'pro', interval: 'month' }, paid: [2900] });

    // Pro's gate opens; team's stays shut.
    await page.getByRole('link', { name: 'Workspace' }).click();
    await page.getByText('ak_live_example_only').waitFor();
    expect(await page.getByRole('region', { name: 'Audit log' }).getByText('Upgrade to use this').count()).toBe(1);

    // Team with 3 seats: the first click shows the provider's preview and changes nothing.
    await page.getByRole('link', { name: 'Billing' }).click();
    const team = pricing.getByRole('article', { name: 'Team' });
    await team.getByLabel('Seats').fill('3');
    expect(await team.getByText('Total: €297.00').count()).toBe(1);
    await team.getByRole('button', { name: 'Choose Team' }).click();
    const preview = page.getByRole('region', { name: 'Confirm your change' });
    const total = await preview.getByText(/^Due now: €\d+\.\d\d$/).textContent();
    const due = total!.slice('Due now: '.length);
    expect(await preview.getByRole('heading', { name: 'Confirm your change' }).evaluate(focused)).toBe(true);
    expect(await preview.getByRole('table').count()).toBe(1);
    expect(await axeViolations(page)).toEqual([]);
    expect(await state(owner.auth, orgId)).toMatchObject({ subscription: { tier: 'pro', seats: 1 }, paid: [2900] });
    // Confirmed: charged what was shown.
    await preview.getByRole('button', { name: `Confirm and pay ${due}` }).click();
    await page.getByRole('status').filter({ hasText: 'Your plan was changed.' }).waitFor();
    const changed = await stateWithPaid(owner.auth, orgId, 2);
    expect(changed.subscription).toMatchObject({ tier: 'team', seats: 3, interval: 'month', pending_change: null });
    expect(changed.paid.map(euros)).toContain(due);
    await manager.getByText('Team', { exact: true }).waitFor();

    // 5 seats in the plan manager: previewed, then confirmed.
    await manager.getByLabel('Seats').fill('5');
    await manager.getByRole('button', { name: 'Change seats' }).click();
    const seatsDue = (await manager.getByText(/^Due now: €\d+\.\d\d$/).textContent())!.slice('Due now: '.length);
    expect((await state(owner.auth, orgId)).subscription.seats).toBe(3);
    await manager.getByRole('button', { name: `Confirm and pay ${seatsDue}` }).click();
    await manager.getByRole('status').filter({ hasText: 'Your plan was changed.' }).waitFor();
    expect((await state(owner.auth, orgId)).subscription).toMatchObject({ tier: 'team', seats: 5 });

    // Cancel at the period's end, then resume.
    await manager.getByRole('button', { name: 'Cancel at the end of the period' }).click();
    await manager.getByRole('status').filter({ hasText: /^Your subscription ends on / }).waitFor();
    expect((await state(owner.auth, orgId)).subscription.cancel_at_period_end).toBe(true);
    expect(await manager.getByText('Ends on', { exact: true }).count()).toBe(1);
    await manager.getByRole('button', { name: 'Resume the subscription' }).click();
    await manager.getByRole('status').filter({ hasText: 'Your subscription goes on.' }).waitFor();
    expect((await state(owner.auth, orgId)).subscription.cancel_at_period_end).toBe(false);

    // Back to pro: a downgrade waits for the period's end ("from <date>", nothing due), then is kept back.
    await pricing.getByRole('button', { name: 'Choose Pro' }).click();
    const from = await preview.getByText(/^Nothing is due now: the change takes effect from /).textContent();
    const date = from!.replace(/^Nothing is due now: the change takes effect from (.+)\.$/, '$1');
    expect((await state(owner.auth, orgId)).subscription.pending_change).toBeNull();
    await preview.getByRole('button', { name: `Confirm the change from ${date}` }).click();
    await page.getByRole('status').filter({ hasText: `Your plan changes on ${date}.` }).waitFor();
    expect((await state(owner.auth, orgId)).subscription).toMatchObject({ tier: 'team', pending_change: { tier: 'pro' } });
    await manager.getByText(`Changes to Pro on ${date}`).waitFor();
    await manager.getByRole('button', { name: 'Keep my current plan' }).click();
    await manager.getByRole('status').filter({ hasText: 'The change was dropped: you keep your current plan.' }).waitFor();
    expect((await state(owner.auth, orgId)).subscription).toMatchObject({ tier: 'team', seats: 5, pending_change: null });
    expect(await axeViolations(page)).toEqual([]);

    // Team's gate is open too.
    await page.getByRole('link', { name: 'Workspace' }).click();
    await page.getByText('Everything your team changed, in order.').waitFor();
    expect(await axeViolations(page)).toEqual([]);
    await page.screenshot({ path: join(IMAGES, 'example-workspace.png'), fullPage: true });
    expect(problems).toEqual([]);
    await context.close();
  });

  it('on a phone: a paywall opens after an override, a credit pack is bought, a member sees the service\'s refusal, a revoked session signs out', async () => {
    if (!browser) return;
    const orgId = (await createOrganisation(t)).id;
    const owner = await createUserWithSession(t, { org: orgId, role: 'owner' });
    const { context, page, problems } = await open(PHONE, orgId, owner.token, '/');
    const sso = page.getByRole('region', { name: 'Single sign-on' });
    await sso.getByText('Upgrade to use this').waitFor();
    expect(await scrollWidth(page)).toBeLessThanOrEqual(PHONE.width);
    expect(await axeViolations(page)).toEqual([]);
    await page.screenshot({ path: join(IMAGES, 'example-workspace-phone.png'), fullPage: true });

    // The default prompt opens the pricing table in place.
    await sso.getByRole('button', { name: 'See plans' }).click();
    expect(await sso.getByRole('button', { name: 'Hide plans' }).getAttribute('aria-expanded')).toBe('true');
    await sso.getByRole('button', { name: 'Choose Enterprise' }).waitFor();
    expect(await axeViolations(page)).toEqual([]);

    // Support grants single sign-on (the admin override route); the window regains focus and the gate opens.
    await t.http().put(`/api/admin/organisations/${orgId}/overrides/sso`).set('X-Service-Key', SERVICE_KEY).send({ value: true }).expect(200);
    await regainFocus(page);
    await sso.getByText('Single sign-on is on for your organisation.').waitFor();

    // A credit pack: the sandbox's checkout, back to the app, and the invoice paid.
    const credits = page.getByRole('region', { name: 'AI tokens credits' });
    expect(await credits.getByText('100,000 of 100,000 included this period left').count()).toBe(1);
    expect(await credits.getByText('Credit balance: 0').count()).toBe(1);
    expect(await credits.getByText('Available now: 100,000').count()).toBe(1);
    await Promise.all([page.waitForURL(/\/sandbox\/checkout\/cs_/), credits.getByRole('button', { name: 'Buy 1,000,000 AI tokens for €10.00' }).click()]);
    await Promise.all([page.waitForURL(/\/billing\/success\?session_id=cs_\w+&credits=1$/), page.getByRole('button', { name: 'Pay €10.00' }).click()]);
    await page.getByText('Payment received: your credits are on their way.').waitFor();
    expect((await stateWithPaid(owner.auth, orgId, 1)).paid).toEqual([1000]);
    // The sandbox's paid event grants the pack; once the service has it, the workspace shows the balance grown.
    const read = async () => (await t.http().get('/api/licensing/credits').set(owner.auth).query({ organisation_id: orgId }).expect(200)).body.data[0];
    const granted = await waitFor('the pack granted', async () => ((await read()).balance === 1_000_000 ? read() : undefined));
    await page.getByRole('link', { name: 'Workspace' }).click();
    const after = page.getByRole('region', { name: 'AI tokens credits' });
    await after.getByText('Credit balance: 1,000,000').waitFor();
    expect(await after.getByText('Available now: 1,100,000').count()).toBe(1);
    const expires = new Intl.DateTimeFormat('en-US', { dateStyle: 'medium' }).format(new Date(granted.grants[0].expires_at));
    expect(await after.getByRole('list', { name: 'Credits by expiry, in the order they are used' }).getByRole('listitem').allTextContents()).toEqual([
      `1,000,000 expire on ${expires}`,
    ]);
    expect(await axeViolations(page)).toEqual([]);

    await page.getByRole('link', { name: 'Billing' }).click();
    await page.getByRole('region', { name: 'Plans' }).getByRole('button', { name: 'Choose Pro' }).waitFor();
    expect(await scrollWidth(page)).toBeLessThanOrEqual(PHONE.width);
    expect(await axeViolations(page)).toEqual([]);
    await page.screenshot({ path: join(IMAGES, 'example-billing-phone.png'), fullPage: true });

    // A plain member may read but not buy: the service's own message, readable, and nothing retried.
    const member = await createUserWithSession(t, { org: orgId, role: 'member' });
    const refusal = (await t.http().post('/api/billing/checkout').set(member.auth).send({ organisation_id: orgId, tier: 'pro' }).expect(403)).body;
    const asMember = await open(PHONE, orgId, member.token, '/billing');
    await asMember.page.getByRole('region', { name: 'Plans' }).getByRole('button', { name: 'Choose Pro' }).click();
    const alert = asMember.page.getByRole('alert');
    await alert.waitFor();
    expect(await alert.textContent()).toContain(refusal.message);
    expect(await alert.getByRole('button').count()).toBe(0);
    expect(await axeViolations(asMember.page)).toEqual([]);
    expect((await state(owner.auth, orgId)).subscription).toBeNull();
    await asMember.context.close();

    // The session revoked: the next read answers 401 and the app's onUnauthorized signs out.
    await t.http().post('/api/admin/sessions/revoke').set('X-Service-Key', SERVICE_KEY).send({ token: owner.token }).expect(200);
    await regainFocus(page);
    await page.getByText('Your session has ended.').waitFor();
    expect(problems).toEqual([]);
    await context.close();
  });
});
