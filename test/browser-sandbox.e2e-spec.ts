import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { SandboxStore } from '../src/sandbox/sandbox.store';
import { formatMoney } from '../src/common/display-format';
import { cli } from './support/run-cli';
import { createOrganisation, createUserWithSession, startTestApp, TEST_WEBHOOK_SECRET, TestApp } from './support/test-app';
import { axeViolations, launchChromium } from './support/browser';

jest.setTimeout(60_000);

/**
 * The sandbox purchase flow in a real browser (a local Chromium, driven by playwright-core): a person
 * opens the checkout URL, pays with the keyboard, lands back on the web app; later cancels in the portal.
 * The web app (APP_URL) is a tiny local server, so the redirects land on a page that answers.
 */
describe('sandbox checkout in a browser', () => {
  let webApp: Server;
  let appUrl: string;
  let t: TestApp;
  let browser: Browser | undefined;

  beforeAll(async () => {
    webApp = createServer((req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
      res.end(`<!doctype html><html lang="en"><title>Web app</title><h1>Web app</h1><p id="path">${encodeURI(req.url ?? '')}</p></html>`);
    });
    await new Promise<void>((resolve) => webApp.listen(0, '127.0.0.1', resolve));
    appUrl = `http://127.0.0.1:${(webApp.address() as AddressInfo).port}`;
    browser = await launchChromium();
    if (browser) t = await startTestApp({ env: { APP_URL: appUrl } });
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await new Promise((resolve) => webApp?.close(resolve));
  });

  /** What the service knows of the organisation's subscription, as the web app reads it. */
  async function state(owner: { auth: Record<string, string> }, orgId: string) {
    const status = (await t.http().get('/api/licensing/status').set(owner.auth).query({ organisation_id: orgId }).expect(200)).body;
    const { subscription } = (await t.http().get('/api/billing/subscription').set(owner.auth).query({ organisation_id: orgId }).expect(200)).body;
    const history = (await t.http().get('/api/billing/history').set(owner.auth).query({ organisation_id: orgId }).expect(200)).body.data;
    return { license: status.license, subscription, paid: history.map((h: { amount_paid: number }) => h.amount_paid) };
  }

  it('buys yearly pro with the keyboard (the button says €290.00 before it is pressed), reviews then confirms a switch, and asks before cancelling', async () => {
    if (!browser) return; // no Chromium on this machine (not CI): global setup printed one line saying so
    const orgId = (await createOrganisation(t)).id;
    const owner = await createUserWithSession(t, { org: orgId, role: 'owner' });
    const checkout = await t.http().post('/api/billing/checkout').set(owner.auth).send({ organisation_id: orgId, tier: 'pro' }).expect(201);

    const page = await browser.newPage();
    const problems: string[] = [];
    page.on('console', (msg) => msg.type() === 'error' && problems.push(msg.text()));
    page.on('pageerror', (err) => problems.push(err.message));
    await page.goto(checkout.body.url);
    expect(await page.title()).toBe('Subscribe to pro · Sandbox payments');
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Subscribe to pro');
    expect(await page.getByRole('note').textContent()).toBe('Sandbox — no real payment');
    expect(await axeViolations(page)).toEqual([]);

    // The first Tab reaches the interval (above the Pay button); the arrow chooses yearly and the button follows.
    await page.keyboard.press('Tab');
    const focused = (el: any) => el.ownerDocument.activeElement === el;
    expect(await page.getByRole('radio', { name: '€29.00 per month' }).evaluate(focused)).toBe(true);
    await page.keyboard.press('ArrowDown');
    expect(await page.getByRole('radio', { name: '€290.00 per year' }).isChecked()).toBe(true);
    expect(await page.locator('output').textContent()).toBe('€290.00 per year');
    await page.keyboard.press('Tab');
    const pay = page.getByRole('button', { name: 'Pay €290.00' });
    // (Reached through the element: this file compiles without the DOM library.)
    expect(await pay.evaluate(focused)).toBe(true);
    expect(await pay.evaluate((el: any) => el.ownerDocument.defaultView.getComputedStyle(el).outlineStyle)).toBe('solid');
    await Promise.all([page.waitForURL(`${appUrl}/billing/success?session_id=${checkout.body.session_id}`), page.keyboard.press('Enter')]);
    expect(await page.locator('h1').textContent()).toBe('Web app');
    // The interval chosen is the interval bought, at the amount the button said.
    expect(await state(owner, orgId)).toMatchObject({
      license: { tier: 'pro', is_active: true, is_expired: false },
      subscription: { tier: 'pro', interval: 'year' },
      paid: [29000],
    });

    const portal = (await t.http().get('/api/billing/portal').set(owner.auth).query({ organisation_id: orgId }).expect(200)).body.url;
    await page.goto(portal);
    expect(await axeViolations(page)).toEqual([]);
    // No seats asked: none of these tiers is sold per seat.
    expect(await page.getByLabel('Seats').count()).toBe(0);
    // The first click reviews the provider's preview and changes nothing.
    await Promise.all([page.waitForURL(/\/change\?tier=team&interval=year$/), page.getByRole('button', { name: 'Switch to team' }).click()]);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Confirm your change');
    const due = (await page.locator('p.total strong').textContent())!;
    expect(due).toMatch(/^€\d{3}\.\d\d$/);
    expect(await axeViolations(page)).toEqual([]);
    expect(await state(owner, orgId)).toMatchObject({ license: { tier: 'pro' }, subscription: { tier: 'pro', interval: 'year' }, paid: [29000] });
    // Confirmed: charged what was shown, back in the portal with the new plan.
    await Promise.all([page.waitForURL(`${portal}?done=changed`), page.getByRole('button', { name: `Confirm and pay ${due}` }).click()]);
    expect(await page.getByRole('status').textContent()).toBe('Your plan was changed.');
    // The subscription's section first; the saved card's ("Payment method") after it.
    expect(await page.getByRole('heading', { level: 2 }).allTextContents()).toEqual(['team plan (active)', 'Payment method']);
    const switched = await state(owner, orgId);
    expect(switched).toMatchObject({ license: { tier: 'team', is_active: true }, subscription: { tier: 'team', interval: 'year' } });
    expect(switched.paid.map((amount: number) => formatMoney(amount, 'eur'))).toContain(due);

    // "Cancel now" asks first; the question changes nothing.
    await Promise.all([page.waitForURL(/\/cancel-now$/), page.getByRole('link', { name: 'Cancel now' }).click()]);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Cancel your team plan now?');
    expect(await axeViolations(page)).toEqual([]);
    expect((await state(owner, orgId)).license).toMatchObject({ tier: 'team', is_active: true });
    await Promise.all([page.waitForURL(`${portal}?done=ended`), page.getByRole('button', { name: 'Cancel the subscription now' }).click()]);
    expect(await page.getByRole('status').textContent()).toBe('Your subscription was canceled.');
    expect(await page.getByText('This customer has no active subscription.').count()).toBe(1);
    expect((await state(owner, orgId)).license).toEqual({ tier: 'free', is_active: true, is_expired: false });
    await Promise.all([page.waitForURL(`${appUrl}/billing`), page.getByRole('link', { name: 'Return to the application' }).click()]);
    expect(problems).toEqual([]);
    await page.close();
  });

  it('without script, pays nothing when the choice changed after the page showed its total, then pays what the button says', async () => {
    if (!browser) return;
    const orgId = (await createOrganisation(t)).id;
    const owner = await createUserWithSession(t, { org: orgId, role: 'owner' });
    const checkout = await t.http().post('/api/billing/checkout').set(owner.auth).send({ organisation_id: orgId, tier: 'pro' }).expect(201);
    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    await page.goto(checkout.body.url);
    await page.getByRole('radio', { name: '€290.00 per year' }).check();
    // Nothing updates the button without script: it still says the monthly amount, which is not what would be bought.
    await Promise.all([page.waitForURL(/recheck=1/), page.getByRole('button', { name: 'Pay €29.00' }).click()]);
    expect(await page.getByRole('alert').textContent()).toBe('Nothing was charged: the total for your choice is €290.00 per year. Check it, then press Pay €290.00.');
    expect(await state(owner, orgId)).toMatchObject({ license: { tier: 'free' }, subscription: null, paid: [] });
    expect(await page.getByRole('radio', { name: '€290.00 per year' }).isChecked()).toBe(true);
    await Promise.all([page.waitForURL(`${appUrl}/billing/success?session_id=${checkout.body.session_id}`), page.getByRole('button', { name: 'Pay €290.00' }).click()]);
    expect(await state(owner, orgId)).toMatchObject({ license: { tier: 'pro', is_active: true }, subscription: { interval: 'year' }, paid: [29000] });
    await context.close();
  });
});

/**
 * Spec §11.6 in a browser, on a phone's width: a per-seat plan bought with a trial on the sandbox's checkout
 * page (seats changed there first), seats added in its portal (now, free during the trial), a downgrade of seats
 * scheduled for the period's end (through the service's route, as a web app does; the portal shows it), then the
 * test clock moved past the trial's end. The license is read after each step.
 */
describe('sandbox plans in a browser: seats, a trial, a scheduled downgrade, the test clock', () => {
  const PHONE = { width: 375, height: 667 };
  let webApp: Server;
  let appUrl: string;
  let t: TestApp;
  let browser: Browser | undefined;

  beforeAll(async () => {
    webApp = createServer((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' });
      res.end('<!doctype html><html lang="en"><title>Web app</title><h1>Web app</h1></html>');
    });
    await new Promise<void>((resolve) => webApp.listen(0, '127.0.0.1', resolve));
    appUrl = `http://127.0.0.1:${(webApp.address() as AddressInfo).port}`;
    browser = await launchChromium();
    if (!browser) return;
    const tiersFile = join(mkdtempSync(join(tmpdir(), 'browser-tiers-')), 'tiers.json');
    writeFileSync(tiersFile, JSON.stringify({
      free: { projects: 3, ai_tokens: 100000, users: 3 },
      pro: { projects: 25, ai_tokens: 2000000, users: 10 },
      team: { projects: 100, ai_tokens: 10000000, users: { per_seat: true, max: 50 }, trial_days: 14 },
    }));
    t = await startTestApp({ env: { APP_URL: appUrl, TIERS_FILE: tiersFile } });
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await new Promise((resolve) => webApp?.close(resolve));
  });

  const scrollWidth = (page: Page) => page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth as number);

  it('buys 3 seats of team with a trial, adds 2, schedules a drop to 4, and the clock applies it after the trial', async () => {
    if (!browser) return; // no Chromium on this machine (not CI): global setup printed one line saying so
    const orgId = (await createOrganisation(t)).id;
    const owner = await createUserWithSession(t, { org: orgId, role: 'owner' });
    const read = async () => {
      const status = (await t.http().get('/api/licensing/status').set(owner.auth).query({ organisation_id: orgId }).expect(200)).body;
      const { subscription } = (await t.http().get('/api/billing/subscription').set(owner.auth).query({ organisation_id: orgId }).expect(200)).body;
      return { license: status.license, users: status.usage.users.limit, subscription };
    };
    // The sandbox's checkout as the provider is asked for one: team, 2 seats, a 14-day trial, a card optional.
    const session = await t.app.get(SandboxStore).createCheckout({
      tier: 'team', interval: 'month', quantity: 2, trialDays: 14, paymentMethodCollection: 'if_required',
      metadata: { organisation_id: orgId, tier: 'team' }, clientReferenceId: orgId,
      successUrl: `${appUrl}/billing/success?session_id={CHECKOUT_SESSION_ID}`, cancelUrl: `${appUrl}/billing/cancel`,
    });
    const context = await browser.newContext({ viewport: PHONE, isMobile: true, hasTouch: true });
    const page = await context.newPage();

    await page.goto(`${t.baseUrl}/sandbox/checkout/${session.id}`);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Subscribe to team');
    expect(await page.getByText('14 days free').count()).toBe(1);
    expect(await page.getByRole('button', { name: 'Start trial without a card' }).count()).toBe(1);
    expect(await scrollWidth(page)).toBeLessThanOrEqual(PHONE.width);
    await page.getByLabel('Seats', { exact: true }).fill('3');
    // The total follows the seats as they are typed; the trial's button names no amount.
    expect(await page.locator('output').textContent()).toBe('€297.00 per month (3 seats)');
    expect(await axeViolations(page)).toEqual([]);
    await Promise.all([page.waitForURL(`${appUrl}/billing/success?session_id=${session.id}`), page.getByRole('button', { name: 'Add card and start trial' }).click()]);
    expect(await read()).toMatchObject({
      license: { tier: 'team', is_active: true, is_expired: false },
      users: 3,
      subscription: { status: 'trialing', seats: 3, pending_change: null },
    });

    // The portal: seats only for team (sold per seat); 5 seats now (bigger: at once; nothing to pay in a trial).
    const portal = (await t.http().get('/api/billing/portal').set(owner.auth).query({ organisation_id: orgId }).expect(200)).body.url;
    await page.goto(portal);
    expect(await scrollWidth(page)).toBeLessThanOrEqual(PHONE.width);
    expect(await page.getByLabel('Seats', { exact: true }).count()).toBe(1);
    await page.getByLabel('Seats', { exact: true }).fill('5');
    await Promise.all([page.waitForURL(/seats=5$/), page.getByRole('button', { name: 'Change team' }).click()]);
    expect(await page.locator('p.total').textContent()).toBe('Due now: €0.00 (the trial is free whatever the plan)');
    expect(await scrollWidth(page)).toBeLessThanOrEqual(PHONE.width);
    expect((await read()).users).toBe(3);
    await Promise.all([page.waitForURL(`${portal}?done=changed`), page.getByRole('button', { name: 'Confirm the change' }).click()]);
    expect(await read()).toMatchObject({ license: { tier: 'team', is_active: true }, users: 5, subscription: { seats: 5, pending_change: null } });

    // 4 seats, through the service's own route as the web app asks: smaller, so it waits for the period's end
    // (the trial's end) as a schedule, which the portal shows.
    await t.http().post('/api/billing/subscription/change').set(owner.auth).send({ organisation_id: orgId, seats: 4 }).expect(200);
    const scheduled = await read();
    expect(scheduled).toMatchObject({ users: 5, subscription: { seats: 5, pending_change: { tier: 'team', seats: 4, interval: 'month' } } });
    await page.goto(portal);
    expect(await page.getByRole('definition').filter({ hasText: /^team, €396\.00 per month \(4 seats\), from \d{1,2} [A-Z][a-z]{2} \d{4}$/ }).count()).toBe(1);
    expect(await page.getByRole('button', { name: 'Keep the current plan' }).count()).toBe(1);
    expect(await scrollWidth(page)).toBeLessThanOrEqual(PHONE.width);

    // The clock past the trial's end: the schedule's 4 seats hold, and the first invoice charges them.
    const env = { PAYPROVIDER_WEBHOOK_SECRET: TEST_WEBHOOK_SECRET };
    const moved = await cli(['sandbox:advance', '--org', orgId, '--days', '15', '--url', `${t.baseUrl}/api/webhooks/payprovider`], env, { app: t.app });
    expect(moved.code).toBe(0);
    expect(moved.json.events.map((e: { type: string }) => e.type)).toEqual([
      'customer.subscription.trial_will_end',
      'subscription_schedule.released',
      'customer.subscription.updated',
      'invoice.paid',
    ]);
    expect(await read()).toMatchObject({
      license: { tier: 'team', is_active: true, is_expired: false },
      users: 4,
      subscription: { status: 'active', seats: 4, pending_change: null },
    });
    const history = (await t.http().get('/api/billing/history').set(owner.auth).query({ organisation_id: orgId }).expect(200)).body.data;
    expect(history.map((h: { amount_paid: number }) => h.amount_paid).sort((a: number, b: number) => a - b)).toEqual([0, 4 * 9900]);

    // The invoice page, on the phone too.
    const invoiceUrl = history.find((h: { amount_paid: number }) => h.amount_paid > 0).hosted_invoice_url;
    await page.goto(invoiceUrl);
    expect(await page.getByText('4 × team (monthly)').count()).toBe(1);
    expect(await scrollWidth(page)).toBeLessThanOrEqual(PHONE.width);
    await context.close();
  });
});
