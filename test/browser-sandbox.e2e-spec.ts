import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { createOrganisation, createUserWithSession, startTestApp, TestApp } from './support/test-app';
import { launchChromium } from './support/browser';

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

  it('pays for pro with the keyboard, returns to the web app, then switches tier and cancels in the portal', async () => {
    if (!browser) return; // no Chromium on this machine (not CI): global setup printed one line saying so
    const orgId = (await createOrganisation(t)).id;
    const owner = await createUserWithSession(t, { org: orgId, role: 'owner' });
    const license = async () =>
      (await t.http().get('/api/licensing/status').set(owner.auth).query({ organisation_id: orgId }).expect(200)).body.license;
    const checkout = await t.http().post('/api/billing/checkout').set(owner.auth).send({ organisation_id: orgId, tier: 'pro' }).expect(201);

    const page = await browser.newPage();
    await page.goto(checkout.body.url);
    expect(await page.title()).toBe('Subscribe to pro · Sandbox payments');
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Subscribe to pro');
    expect(await page.getByRole('note').textContent()).toBe('Sandbox — no real payment');

    // The first Tab reaches the Pay button, which shows a focus ring; Enter submits.
    await page.keyboard.press('Tab');
    const focused = page.getByRole('button', { name: 'Pay €29.00' });
    // (Reached through the element: this file compiles without the DOM library.)
    expect(await focused.evaluate((el: any) => el.ownerDocument.activeElement === el)).toBe(true);
    expect(await focused.evaluate((el: any) => el.ownerDocument.defaultView.getComputedStyle(el).outlineStyle)).toBe('solid');
    await Promise.all([page.waitForURL(`${appUrl}/billing/success?session_id=${checkout.body.session_id}`), page.keyboard.press('Enter')]);
    expect(await page.locator('h1').textContent()).toBe('Web app');
    expect(await license()).toEqual({ tier: 'pro', is_active: true, is_expired: false });

    const portal = await t.http().get('/api/billing/portal').set(owner.auth).query({ organisation_id: orgId }).expect(200);
    await page.goto(portal.body.url);
    await page.getByLabel('Plan', { exact: true }).selectOption('team');
    await Promise.all([page.waitForURL(`${appUrl}/billing`), page.getByRole('button', { name: 'Change plan' }).click()]);
    expect(await license()).toMatchObject({ tier: 'team', is_active: true });

    await page.goto(portal.body.url);
    await Promise.all([page.waitForURL(`${appUrl}/billing`), page.getByRole('button', { name: 'Cancel now' }).click()]);
    expect(await license()).toEqual({ tier: 'free', is_active: true, is_expired: false });
    await page.goto(portal.body.url);
    expect(await page.getByText('This customer has no active subscription.').count()).toBe(1);
    await page.close();
  });
});
