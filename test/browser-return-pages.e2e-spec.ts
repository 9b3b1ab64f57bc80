import { INestApplication } from '@nestjs/common';
import pino from 'pino';
import type { Browser, Page } from 'playwright-core';
import { DataSource } from 'typeorm';
import { createApp } from '../src/app.factory';
import { IdentityService } from '../src/identity/identity.service';
import { SessionService } from '../src/identity/session.service';
import { launchChromium } from './support/browser';
import { createTestDatabase } from './support/databases';
import { freePort } from './support/free-port';
import { testConfig } from './support/test-app';

jest.setTimeout(60_000);

const PHONE = { width: 375, height: 667 };

/**
 * On a 375 × 667 phone: the sandbox's checkout and portal pages and the three return pages fit the screen
 * (nothing scrolls sideways), and a checkout paid in the browser lands on the service's own success page.
 * APP_URL is left at its meaning by default, the service's own origin: the app listens on a port chosen
 * before it starts, so that APP_URL can name it.
 */
describe('payment pages on a phone', () => {
  let app: INestApplication | undefined;
  let drop: (() => Promise<void>) | undefined;
  let origin: string;
  let browser: Browser | undefined;

  beforeAll(async () => {
    browser = await launchChromium();
    if (!browser) return;
    const port = await freePort();
    origin = `http://localhost:${port}`;
    const db = await createTestDatabase();
    drop = db.drop;
    app = await createApp(testConfig(db.url, { APP_URL: origin }), pino({ level: 'silent' }));
    await app.listen(port, '127.0.0.1');
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await drop?.();
  });

  /** The page's width as laid out: above 375 means the phone scrolls sideways. */
  const scrollWidth = (page: Page) => page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth as number);
  const heading = (page: Page) => page.getByRole('heading', { level: 1 }).textContent();

  async function api(method: 'GET' | 'POST', path: string, token: string, body?: object): Promise<any> {
    const res = await fetch(`${origin}${path}`, {
      method,
      headers: { Authorization: `Bearer ${token}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
      body: body && JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`${method} ${path} answered ${res.status}: ${await res.text()}`);
    return res.json();
  }

  it('fits checkout, portal and return pages in 375 px, and lands on the success page after paying', async () => {
    if (!browser) return; // no Chromium on this machine (not CI): global setup printed one line saying so
    const identity = app!.get(IdentityService);
    const org = await identity.createOrganisation('Phone Ltd');
    const user = await identity.createUser(`phone.${Date.now()}@example.com`);
    await identity.addMember(org.id, user.id, 'owner');
    const { token } = await app!.get(SessionService).create(app!.get(DataSource).manager, user.id, 3600);
    const checkout = await api('POST', '/api/billing/checkout', token, { organisation_id: org.id, tier: 'enterprise' });

    const context = await browser.newContext({ viewport: PHONE, isMobile: true, hasTouch: true });
    const page = await context.newPage();
    await page.goto(checkout.url);
    expect(await heading(page)).toBe('Subscribe to enterprise');
    expect(await scrollWidth(page)).toBeLessThanOrEqual(PHONE.width);

    // Cancelling returns to the service's own cancel page.
    await Promise.all([page.waitForURL(`${origin}/billing/cancel`), page.getByRole('link', { name: 'Cancel and return' }).click()]);
    expect(await heading(page)).toBe('Checkout cancelled');
    expect(await scrollWidth(page)).toBeLessThanOrEqual(PHONE.width);

    // Back to the checkout, pay: the events are delivered, then the browser lands on the success page.
    await page.goto(checkout.url);
    await Promise.all([
      page.waitForURL(`${origin}/billing/success?session_id=${checkout.session_id}`),
      page.getByRole('button', { name: /^Pay / }).click(),
    ]);
    expect(await heading(page)).toBe('Payment received');
    expect(await page.getByText('Your plan is being activated').count()).toBe(1);
    expect(await scrollWidth(page)).toBeLessThanOrEqual(PHONE.width); // with the 66-character session id shown
    const status = await api('GET', `/api/licensing/status?organisation_id=${org.id}`, token);
    expect(status.license).toEqual({ tier: 'enterprise', is_active: true, is_expired: false });

    const portal = await api('GET', `/api/billing/portal?organisation_id=${org.id}`, token);
    await page.goto(portal.url);
    expect(await heading(page)).toBe('Manage your subscription');
    expect(await scrollWidth(page)).toBeLessThanOrEqual(PHONE.width);
    await Promise.all([page.waitForURL(`${origin}/billing`), page.getByRole('link', { name: 'Return to the application' }).click()]);
    expect(await heading(page)).toBe('Back from the billing portal');
    expect(await scrollWidth(page)).toBeLessThanOrEqual(PHONE.width);
    await context.close();
  });
});
