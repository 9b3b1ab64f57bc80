import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { axeViolations, launchChromium } from './support/browser';
import { consoleLink } from './support/console';
import { createTestDatabase, TestDatabase } from './support/databases';
import { FakeProvider } from './support/fake-provider';
import { SPEC_PLAN_EXAMPLE } from './support/plan-examples';
import { startSubscriptionApp, startSubscriptionDouble, subscribed } from './support/subscribed';
import { TestApp } from './support/test-app';

jest.setTimeout(120_000);

const DESKTOP = { width: 1280, height: 800 };
const PHONE = { width: 375, height: 667 };

function tiersFile(table: unknown): string {
  const file = join(mkdtempSync(join(tmpdir(), 'browser-plans-')), 'tiers.json');
  writeFileSync(file, JSON.stringify(table));
  return file;
}

/**
 * The console's plans page (spec §17) in Chromium: the versions, a preview chosen and a migration started with the
 * keyboard alone, under the console's CSP with no violation, without a serious or critical axe-core violation,
 * and fitting 375 px.
 */
describe('operator console in a browser: the plans page', () => {
  let browser: Browser | undefined;
  let fake: FakeProvider;
  let database: TestDatabase;
  let t: TestApp;

  beforeAll(async () => {
    browser = await launchChromium();
    if (!browser) return;
    fake = await startSubscriptionDouble();
    fake.addPrice('pro_month_2', { currency: 'usd', unit_amount: 2500, recurring: { interval: 'month', interval_count: 1, meter: null, usage_type: 'licensed' } });
    database = await createTestDatabase();
    t = await startSubscriptionApp(fake, { databaseUrl: database.url, env: { TIERS_FILE: tiersFile(SPEC_PLAN_EXAMPLE) } });
    await subscribed(t, fake, { price: 'pro_month' });
    await subscribed(t, fake, { price: 'pro_month' });
    await t.close();
    const lowered = { ...SPEC_PLAN_EXAMPLE, pro: { ...SPEC_PLAN_EXAMPLE.pro, projects: 20, features: { sso: true } } };
    t = await startSubscriptionApp(fake, { databaseUrl: database.url, env: { TIERS_FILE: tiersFile(lowered), PAYPROVIDER_PRICE_PRO: 'pro_month_2' } });
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
    await fake?.close();
    await database?.drop();
  });

  async function open(context: BrowserContext): Promise<{ page: Page; problems: string[] }> {
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('console', (msg) => {
      if (msg.type() === 'error' || /Content Security Policy|Refused to/i.test(msg.text())) problems.push(msg.text());
    });
    page.on('pageerror', (err) => problems.push(err.message));
    return { page, problems };
  }

  async function signIn(page: Page): Promise<void> {
    const link = new URL(await consoleLink(t, 'plans@example.com'));
    await page.goto(`${t.baseUrl}${link.pathname}${link.search}`);
    await Promise.all([page.waitForURL(`${t.baseUrl}/console`), page.getByRole('button', { name: 'Sign in' }).click()]);
  }

  const focused = (page: Page) => page.evaluate(() => (globalThis as any).document.activeElement?.textContent?.trim() ?? '');
  const focusedId = (page: Page) => page.evaluate(() => (globalThis as any).document.activeElement?.id ?? '');
  const scrollWidth = (page: Page) => page.evaluate(() => (globalThis as any).document.documentElement.scrollWidth as number);

  /** Tabs forward until `matches` says the focused element is the one wanted (at most 60 presses). */
  async function tabTo(page: Page, what: string, matches: () => Promise<boolean>): Promise<void> {
    for (let i = 0; i < 60; i++) {
      await page.keyboard.press('Tab');
      if (await matches()) return;
    }
    throw new Error(`no ${what} reached with Tab`);
  }

  it('has no serious or critical axe-core violation and fits 375 px: the versions, the preview and its form', async () => {
    if (!browser) return;
    for (const viewport of [DESKTOP, PHONE]) {
      const context = await browser.newContext({ viewport, ...(viewport === PHONE ? { isMobile: true, hasTouch: true } : {}) });
      const { page, problems } = await open(context);
      await signIn(page);
      const found: string[] = [];
      for (const path of ['/console/plans', '/console/plans?tier=pro', '/console/plans?tier=pro&to_version=9']) {
        await page.goto(`${t.baseUrl}${path}`);
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

  it('previews and migrates with the keyboard alone, then shows the migration (axe-clean, 375 px)', async () => {
    if (!browser) return;
    const context = await browser.newContext({ viewport: PHONE, isMobile: true, hasTouch: true });
    const { page, problems } = await open(context);
    await signIn(page);
    await page.goto(`${t.baseUrl}/console/plans`);
    // The tier chosen, the versions left to their defaults, then Preview, by keyboard.
    await tabTo(page, 'the tier', async () => (await focusedId(page)) === 'pv-tier');
    await tabTo(page, 'the Preview button', async () => (await focused(page)) === 'Preview');
    await Promise.all([page.waitForURL(/\/console\/plans\?tier=pro/), page.keyboard.press('Enter')]);
    expect(await page.getByRole('term').filter({ hasText: 'Subscriptions that would move' }).count()).toBe(1);
    // At the period's end is the default; Now chosen with the arrow keys, then the button.
    await tabTo(page, 'the first choice of when', async () => (await page.evaluate(() => (globalThis as any).document.activeElement?.value)) === 'period_end');
    await page.keyboard.press('ArrowDown');
    expect(await page.getByRole('radio', { name: 'Now' }).isChecked()).toBe(true);
    await tabTo(page, 'the migrate button', async () => (await focused(page)) === 'Migrate 2 subscriptions');
    await Promise.all([page.waitForURL(/migration=/), page.keyboard.press('Enter')]);
    expect(await page.getByRole('status').textContent()).toBe('Migration started: 2 pro subscriptions from every older version to version 2, now.');
    expect(await page.getByRole('heading', { name: 'Migration of pro' }).count()).toBe(1);
    const [audited] = await t.db.query(`SELECT actor FROM audit_log WHERE action = 'plan.migration_started'`);
    expect(audited.actor).toBe('operator:plans@example.com');
    expect(await axeViolations(page)).toEqual([]);
    expect(await scrollWidth(page)).toBeLessThanOrEqual(PHONE.width);
    expect(problems).toEqual([]);
    await context.close();
  });
});
