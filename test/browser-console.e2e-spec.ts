import { INestApplication } from '@nestjs/common';
import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import pino from 'pino';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { DataSource } from 'typeorm';
import { createApp } from '../src/app.factory';
import { IdentityService } from '../src/identity/identity.service';
import { axeViolations, launchChromium } from './support/browser';
import { consoleLink } from './support/console';
import { createTestDatabase } from './support/databases';
import { freePort } from './support/free-port';
import { newNotifySecret, NotificationReceiver, startReceiver } from './support/notification-receiver';
import { invoiceObject, providerEvent, subscriptionEvent, subscriptionObject } from './support/provider-events';
import { startTestApp, testConfig, TestApp } from './support/test-app';
import { waitFor } from './support/wait-for';
import { deliver } from './support/webhook-signing';

jest.setTimeout(120_000);

const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 375, height: 667 };
// Every run saves its screenshots under test-results/ (ignored by git), so that a test run leaves the tree
// clean; SCREENSHOTS_DIR=docs/images refreshes the README's.
const IMAGES = process.env.SCREENSHOTS_DIR ? resolve(process.env.SCREENSHOTS_DIR) : join(__dirname, '..', 'test-results', 'screenshots');

/**
 * The operator console in Chromium (spec §14), as support uses it for "we paid but we're still on free": sign
 * in by link, find the organisation by a member's email, open it, replay the event that failed (its price was
 * not configured; the configuration is fixed) and see the license change; retry a failed notification. Every
 * page under the service's CSP with no violation, without a serious or critical axe-core violation, usable by
 * keyboard, and fitting 375 px. Screenshots at 1280 and 375 px go to IMAGES (below).
 */
describe('operator console in a browser', () => {
  const secret = newNotifySecret();
  const PRICE = 'price_browser_console_pro';
  const email = `owner.${Date.now()}@acme-browser.example`;
  let browser: Browser | undefined;
  let receiver: NotificationReceiver;
  let app: INestApplication | undefined;
  let drop: (() => Promise<void>) | undefined;
  let origin: string;
  let orgId: string;
  let failedEventId: string;
  let subscriptionId: string;
  let t: TestApp;

  beforeAll(async () => {
    browser = await launchChromium();
    if (!browser) return;
    receiver = await startReceiver(secret);
    const db = await createTestDatabase();
    drop = db.drop;
    // Yesterday's configuration did not know the price: the customer's subscription event was stored failed.
    const before = await startTestApp({ databaseUrl: db.url, env: { NOTIFY_URLS: receiver.url, NOTIFY_SECRET: secret } });
    const identity = before.app.get(IdentityService);
    const org = await identity.createOrganisation('Acme Browser Ltd');
    orgId = org.id;
    const user = await identity.createUser(email);
    await identity.addMember(org.id, user.id, 'owner');
    const failed = subscriptionEvent('created', subscriptionObject({ organisationId: org.id, tierSource: 'none', price: PRICE, quantity: 1 }));
    failedEventId = failed.id;
    subscriptionId = failed.data.object.id;
    expect((await deliver(before.app.getHttpServer(), failed).expect(200)).body.status).toBe('failed');
    // Another organisation, on pro, whose notification gave up (the web app was down for a day).
    const other = await identity.createOrganisation('Notified Ltd');
    await deliver(before.app.getHttpServer(), subscriptionEvent('created', subscriptionObject({ organisationId: other.id, tier: 'pro' }))).expect(200);
    await waitFor('the notification', async () => receiver.accepted(other.id).length === 1);
    await before.db.query(
      `UPDATE notification_deliveries SET status = 'failed', last_error = 'HTTP 503', next_attempt_at = NULL
       WHERE message_id IN (SELECT id FROM notification_messages WHERE organisation_id = $1)`,
      [other.id],
    );
    await before.close();

    // Today's configuration knows it. The console runs on it, on a port known before start (its links name it).
    const port = await freePort();
    origin = `http://localhost:${port}`;
    app = await createApp(
      testConfig(db.url, { PUBLIC_URL: origin, PAYPROVIDER_PRICE_PRO: PRICE, NOTIFY_URLS: receiver.url, NOTIFY_SECRET: secret }),
      pino({ level: 'silent' }),
    );
    await app.listen(port, '127.0.0.1');
    t = { app, db: app.get(DataSource) } as TestApp;
    // Its first invoice, paid in euros: the billing history shows the provider's amount as money.
    const invoice = invoiceObject({ organisationId: orgId, subscription: subscriptionId, amountPaid: 2900, currency: 'eur', price: PRICE });
    await deliver(app.getHttpServer(), providerEvent('invoice.payment_succeeded', invoice)).expect(200);
  });
  afterAll(async () => {
    await browser?.close();
    await app?.close();
    await receiver?.close();
    await drop?.();
  });

  /** A page that records CSP violations and script errors. */
  async function open(context: BrowserContext): Promise<{ page: Page; problems: string[] }> {
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('console', (msg) => {
      if (msg.type() === 'error' || /Content Security Policy|Refused to/i.test(msg.text())) problems.push(msg.text());
    });
    page.on('pageerror', (err) => problems.push(err.message));
    return { page, problems };
  }

  async function signIn(page: Page, who = 'support@example.com'): Promise<void> {
    await page.goto(await consoleLink(t, who));
    await Promise.all([page.waitForURL(`${origin}/console`), page.getByRole('button', { name: 'Sign in' }).click()]);
  }

  const scrollWidth = (page: Page) => page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth as number);
  const shot = (page: Page, name: string) => {
    mkdirSync(IMAGES, { recursive: true });
    return page.screenshot({ path: join(IMAGES, name), fullPage: true });
  };

  it('signs in by link, finds the organisation by email, replays its failed event and sees the license change', async () => {
    if (!browser) return; // no Chromium on this machine (not CI): global setup printed one line saying so
    const context = await browser.newContext({ viewport: DESKTOP });
    const { page, problems } = await open(context);
    await signIn(page);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Overview');
    // The chart is drawn by Chart.js, served by the service.
    await page.waitForFunction(() => (globalThis as any).Chart?.getChart?.((globalThis as any).document.getElementById('events-chart')) !== undefined);

    await page.getByRole('link', { name: 'Organisations' }).click();
    await page.getByLabel(/member email/).fill(email.toUpperCase());
    await Promise.all([page.waitForURL(/\/console\/organisations\?q=/), page.getByLabel(/member email/).press('Enter')]);
    await Promise.all([page.waitForURL(`${origin}/console/organisations/${orgId}`), page.getByRole('link', { name: 'Acme Browser Ltd' }).click()]);
    expect(await page.locator('#license-tier').textContent()).toBe('free');
    expect(await page.getByText('tier_unresolvable').count()).toBeGreaterThan(0);

    await Promise.all([
      page.waitForURL(`${origin}/console/organisations/${orgId}`),
      page.getByRole('button', { name: `Replay event ${failedEventId}` }).click(),
    ]);
    expect(await page.getByRole('status').textContent()).toBe(`Replayed event ${failedEventId}: processed.`);
    expect(await page.locator('#license-tier').textContent()).toBe('pro');
    expect(await page.getByRole('button', { name: `Replay event ${failedEventId}` }).count()).toBe(0);
    await waitFor('the web app to be told', async () => receiver.accepted(orgId).length === 1);
    expect(problems).toEqual([]);
    await context.close();
  });

  it('retries a failed notification, and refuses a forged POST without the CSRF token', async () => {
    if (!browser) return;
    const context = await browser.newContext({ viewport: DESKTOP });
    const { page, problems } = await open(context);
    await signIn(page);
    await page.getByRole('link', { name: 'Notifications', exact: true }).click();
    await page.getByRole('link', { name: 'failed', exact: true }).click();
    const retry = page.getByRole('button', { name: /^Retry notification / });
    expect(await retry.count()).toBe(1);
    const id = (await retry.getAttribute('aria-label'))!.replace('Retry notification ', '');
    const [{ organisation_id: notified }] = await t.db.query(`SELECT organisation_id FROM notification_messages WHERE id = $1`, [id]);
    await retry.click();
    await page.waitForURL(/\/console\/notifications/);
    expect(await page.getByRole('status').textContent()).toBe(`Notification ${id} queued again for 1 URL.`);
    await waitFor('the notification to be sent again', async () => receiver.accepted(notified).length === 2);

    expect(problems).toEqual([]);

    // A page of the same origin posting without the token: refused, nothing queued or audited.
    const [{ count: audited }] = await t.db.query(`SELECT count(*)::int AS count FROM audit_log WHERE action = 'notification.retried'`);
    const path = `/console/notifications/${encodeURIComponent(id)}/retry`;
    const [forged] = await Promise.all([
      page.waitForResponse((res) => res.url() === `${origin}${path}`),
      page.evaluate((action) => {
        const doc = (globalThis as any).document;
        const form = doc.createElement('form');
        form.method = 'post';
        form.action = action;
        doc.body.appendChild(form);
        form.submit();
      }, path),
    ]);
    expect(forged.status()).toBe(403);
    await page.waitForURL(`${origin}${path}`);
    expect(await page.getByRole('alert').textContent()).toMatch(/no valid security token/);
    const [{ count: after }] = await t.db.query(`SELECT count(*)::int AS count FROM audit_log WHERE action = 'notification.retried'`);
    expect(after).toBe(audited);
    await context.close();
  });

  it('refuses a reused or expired sign-in link', async () => {
    if (!browser) return;
    const context = await browser.newContext({ viewport: DESKTOP });
    const { page } = await open(context);
    const url = await consoleLink(t, 'once@example.com');
    await page.goto(url);
    await Promise.all([page.waitForURL(`${origin}/console`), page.getByRole('button', { name: 'Sign in' }).click()]);
    await context.clearCookies();
    await page.goto(url);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${origin}/console/sign-in/link`);
    expect(await page.getByRole('alert').textContent()).toMatch(/expired, already used/);
    await page.goto(`${origin}/console`);
    expect(page.url()).toBe(`${origin}/console/sign-in`);

    const late = await consoleLink(t, 'late@example.com', '--ttl-minutes', '1');
    await t.db.query(`UPDATE console_sign_in_links SET expires_at = now() - interval '1 second' WHERE email = 'late@example.com'`);
    await page.goto(late);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${origin}/console/sign-in/link`);
    expect(await page.getByRole('alert').textContent()).toMatch(/expired, already used/);
    await context.close();
  });

  it('reads as support reads it: partial search, the license as sentences with their records, overrides marked, changes before → after, money and names', async () => {
    if (!browser) return;
    const context = await browser.newContext({ viewport: DESKTOP });
    const { page, problems } = await open(context);
    await signIn(page);
    const search = async (q: string) => {
      await page.goto(`${origin}/console/organisations?q=${encodeURIComponent(q)}`);
      return page.getByRole('link', { name: 'Acme Browser Ltd' }).count();
    };
    // Part of a member's email, or of the name, in any case, finds it; the email that matched is shown.
    expect(await search('acme-BROWSER')).toBe(1);
    expect(await page.getByText(`member ${email}`).count()).toBe(1);
    expect(await search('browser lt')).toBe(1);
    expect(await search('owner.')).toBe(1);
    expect(await search('nobody-here')).toBe(0);

    await page.goto(`${origin}/console/organisations/${orgId}`);
    const steps = page.locator('ol.timeline li');
    // The chosen subscription and its newest event, as sentences, each linking to its record.
    const followed = steps.filter({ hasText: 'The license follows this subscription: pro active renewing' });
    expect(await followed.count()).toBe(1);
    expect(await followed.textContent()).toMatch(/\(tier from a configured price\)\. subscription sub_\w+$/);
    expect(await followed.getByRole('link').getAttribute('href')).toBe(`#sub-${subscriptionId}`);
    expect(await page.locator(`tr#sub-${subscriptionId}`).count()).toBe(1);
    const created = steps.filter({ hasText: 'Subscription created → applied.' });
    expect(await created.textContent()).toMatch(/^\d{1,2} [A-Z][a-z]{2} \d{4}, \d\d:\d\d UTC Subscription created → applied\. event evt_\w+$/);
    // Money as the provider's amount in its currency; numbers with separators.
    expect(await page.getByRole('region', { name: 'Billing history' }).getByText('€29.00').count()).toBe(1);
    expect(await page.getByText('0 of 2,000,000 (0%)').count()).toBe(1);

    // Overrides of a feature and of a limit, each marked where it applies, each a sentence naming who set it.
    const setOverride = async (name: string, value: string, expires?: string) => {
      await page.getByLabel('Feature or metric').selectOption(name);
      await page.getByLabel('Value (true, false or a limit)').fill(value);
      if (expires) await page.getByLabel('Expires (UTC, optional)').fill(expires);
      await Promise.all([page.waitForURL(`${origin}/console/organisations/${orgId}`), page.getByRole('button', { name: 'Set override' }).click()]);
      expect(await page.getByRole('status').textContent()).toMatch(new RegExp(`^Override of ${name} set to ${value}`));
    };
    await setOverride('sso', 'true', '2030-01-01T00:00');
    await setOverride('projects', '10000000');
    const facts = page.locator('section[aria-labelledby="entitlements-heading"]');
    const dd = (term: string) => facts.locator(`dt:text-is("${term}") + dd`);
    expect(await dd('sso').textContent()).toBe('on override until 1 Jan 2030');
    expect(await dd('projects limit').textContent()).toBe('10,000,000 override with no end; beyond it: refused');
    expect(await dd('audit_log').textContent()).toBe('off');
    const sso = steps.filter({ hasText: 'Override: sso on, by support@example.com, until 1 Jan 2030.' });
    expect(await sso.count()).toBe(1);
    expect(await steps.filter({ hasText: 'Override: projects limit 10,000,000, by support@example.com, with no end.' }).count()).toBe(1);

    // Its link is the audit entry that set it: who by email, the organisation by name, each field before → after.
    await Promise.all([page.waitForURL(/\/console\/audit\/\d+$/), sso.getByRole('link', { name: /^audit entry \d+$/ }).click()]);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toMatch(/^Audit entry \d+$/);
    const entry = page.locator('dl.facts');
    expect(await entry.locator('dt:text-is("Who") + dd').textContent()).toBe('support@example.com');
    expect(await entry.locator('dt:text-is("Action") + dd').textContent()).toBe('override.set');
    expect(await entry.getByRole('link', { name: 'Acme Browser Ltd' }).count()).toBe(1);
    expect(await page.locator('ul.changes li').allTextContents()).toEqual(['name: sso', 'note: none', 'value: yes', 'expires_at: 1 Jan 2030, 00:00 UTC']);

    // A change of a value shows only what changed, before → after; the audit log names organisation and operator.
    await page.goto(`${origin}/console/organisations/${orgId}`);
    await setOverride('projects', '20000000');
    await page.goto(`${origin}/console/audit`);
    const newest = page.locator('tbody tr').first();
    expect(await newest.locator('td[data-label="What changed"] li').allTextContents()).toEqual(['value: 10,000,000 → 20,000,000']);
    expect(await newest.locator('td[data-label="Who"]').textContent()).toBe('support@example.com');
    expect(await newest.locator('td[data-label="Organisation"]').textContent()).toBe(`Acme Browser Ltd${orgId}`);
    expect(problems).toEqual([]);
    await context.close();
  });

  /** The words of table cells and definitions that the layout broke across lines (none, when nothing breaks inside a word). */
  const brokenWords = (page: Page) =>
    page.evaluate(() => {
      const doc = (globalThis as any).document;
      const broken: string[] = [];
      for (const cell of doc.querySelectorAll('td, th, dd')) {
        const walker = doc.createTreeWalker(cell, 4 /* NodeFilter.SHOW_TEXT */);
        for (let node = walker.nextNode(); node; node = walker.nextNode()) {
          for (const word of node.textContent.matchAll(/\S+/g)) {
            const range = doc.createRange();
            range.setStart(node, word.index);
            range.setEnd(node, word.index + word[0].length);
            const lines = new Set([...range.getClientRects()].filter((r: any) => r.width > 0).map((r: any) => Math.round(r.top)));
            if (lines.size > 1) broken.push(word[0]);
          }
        }
      }
      return broken;
    });

  it('keeps the chart at its height, breaks no word at 375 px, and takes full-page screenshots at both widths', async () => {
    if (!browser) return;
    const [{ id: eventId }] = await t.db.query(`SELECT id FROM webhook_events ORDER BY received_at LIMIT 1`);
    // The widest id a change can show (a notification's, `msg_` and 32 hex digits, its letters the widest ones):
    // it must keep to one line of a 375 px card.
    await t.db.query(`INSERT INTO audit_log (actor, action, after) VALUES ('cli:ada', 'notification.retried', $1)`, [
      { id: `msg_${'d'.repeat(32)}`, requeued: 1 },
    ]);
    for (const [viewport, suffix, boxHeight] of [[DESKTOP, '', 256], [PHONE, '-phone', 224]] as const) {
      const context = await browser.newContext({ viewport, ...(viewport === PHONE ? { isMobile: true, hasTouch: true } : {}) });
      const { page, problems } = await open(context);
      await signIn(page);
      await page.waitForFunction(() => (globalThis as any).Chart?.getChart?.((globalThis as any).document.getElementById('events-chart')) !== undefined);
      const height = () => page.locator('#events-chart').evaluate((el: any) => el.getBoundingClientRect().height as number);
      const first = await height();
      await page.waitForTimeout(3000);
      // Chart.js redraws on resize and on a timer of its own: the canvas keeps its container's fixed height.
      expect([first, await height()]).toEqual([boxHeight, boxHeight]);
      await shot(page, `console-overview${suffix}.png`);
      if (viewport === PHONE) {
        const found: string[] = [];
        for (const path of ['/console', '/console/organisations', `/console/organisations?q=${encodeURIComponent('acme')}`, `/console/organisations/${orgId}`,
          '/console/events', `/console/events/${eventId}`, '/console/notifications', '/console/reconciliation', '/console/audit']) {
          await page.goto(`${origin}${path}`);
          found.push(...(await brokenWords(page)).map((word) => `${path}: ${word}`));
        }
        expect(found).toEqual([]);
      }
      await page.goto(`${origin}/console/organisations/${orgId}`);
      await shot(page, `console-organisation${suffix}.png`);
      expect(problems).toEqual([]);
      await context.close();
    }
  });

  it('has no serious or critical axe-core violation on any page, and every page fits 375 px', async () => {
    if (!browser) return;
    const [{ id: eventId }] = await t.db.query(`SELECT id FROM webhook_events LIMIT 1`);
    const pages = [
      '/console',
      '/console/organisations',
      `/console/organisations?q=${encodeURIComponent(email)}`,
      `/console/organisations/${orgId}`,
      '/console/events',
      `/console/events/${eventId}`,
      '/console/notifications',
      '/console/reconciliation',
      '/console/audit',
    ];
    for (const viewport of [DESKTOP, PHONE]) {
      const context = await browser.newContext({ viewport, ...(viewport === PHONE ? { isMobile: true, hasTouch: true } : {}) });
      const { page, problems } = await open(context);
      const signInPage = await page.goto(`${origin}/console/sign-in`);
      expect(signInPage!.status()).toBe(200);
      const found: string[] = (await axeViolations(page)).map((v) => `/console/sign-in: ${v}`);
      await signIn(page);
      for (const path of pages) {
        await page.goto(`${origin}${path}`);
        found.push(...(await axeViolations(page)).map((v) => `${path}: ${v}`));
        if (viewport === PHONE) {
          const width = await scrollWidth(page);
          if (width > PHONE.width) found.push(`${path}: ${width} px wide at 375`);
        }
      }
      expect(found).toEqual([]);
      expect(problems).toEqual([]);
      await context.close();
    }
  });

  it('is usable by keyboard: skip link first, search and open an organisation without a mouse', async () => {
    if (!browser) return;
    const context = await browser.newContext({ viewport: DESKTOP });
    const { page } = await open(context);
    await signIn(page);
    await page.goto(`${origin}/console/organisations`);
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => (globalThis as any).document.activeElement.textContent)).toBe('Skip to content');
    await page.keyboard.press('Enter');
    expect(await page.evaluate(() => (globalThis as any).document.activeElement.id)).toBe('main');
    await page.keyboard.press('Tab');
    expect(await page.evaluate(() => (globalThis as any).document.activeElement.id)).toBe('q');
    await page.keyboard.type('Acme Browser');
    await Promise.all([page.waitForURL(/q=Acme/), page.keyboard.press('Enter')]);
    // Tab to the result's link and follow it.
    for (let i = 0; i < 30; i++) {
      await page.keyboard.press('Tab');
      if ((await page.evaluate(() => (globalThis as any).document.activeElement.textContent)) === 'Acme Browser Ltd') break;
    }
    await Promise.all([page.waitForURL(`${origin}/console/organisations/${orgId}`), page.keyboard.press('Enter')]);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Acme Browser Ltd');
    await context.close();
  });
});
