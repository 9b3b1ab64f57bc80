import type { Browser } from 'playwright-core';
import { startTestApp, TestApp } from './support/test-app';
import { launchChromium } from './support/browser';

jest.setTimeout(60_000);

/** The Swagger UI under its Content-Security-Policy, in a real browser (a local Chromium via playwright-core). */
describe('API docs in a browser', () => {
  let t: TestApp;
  let browser: Browser | undefined;

  beforeAll(async () => {
    browser = await launchChromium();
    if (browser) t = await startTestApp();
  });
  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  it('renders the operations and runs "Try it out" with no CSP violation', async () => {
    if (!browser) return; // no Chromium on this machine (not CI): global setup printed one line saying so
    const page = await browser.newPage();
    const violations: string[] = [];
    page.on('console', (msg) => {
      if (/Content Security Policy|Refused to/i.test(msg.text())) violations.push(msg.text());
    });
    page.on('pageerror', (err) => violations.push(`page error: ${err.message}`));

    await page.goto(`${t.baseUrl}/api/docs`);
    const health = page.locator('.opblock', { hasText: '/api/health' }).first();
    await health.waitFor({ timeout: 15_000 });
    expect(await page.locator('.opblock', { hasText: '/api/me' }).count()).toBeGreaterThan(0);

    await health.locator('.opblock-summary').click();
    await health.getByRole('button', { name: 'Try it out' }).click();
    await health.getByRole('button', { name: 'Execute' }).click();
    const status = health.locator('.live-responses-table tbody .response-col_status').first();
    await status.waitFor({ timeout: 10_000 });
    expect((await status.textContent())?.trim()).toBe('200');

    expect(violations).toEqual([]);
  });
});
