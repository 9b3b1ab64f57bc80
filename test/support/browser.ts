import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { Browser, chromium, Page } from 'playwright-core';

const INSTALL_HINT =
  'install one with `sudo apt-get install chromium` (Debian, Ubuntu) or `npx playwright-core install chromium`, ' +
  'or point CHROMIUM_PATH at a Chromium or Chrome binary';

/** Where a newcomer's Chromium is: CHROMIUM_PATH, the system's package, or one Playwright downloaded. */
export function findChromium(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.CHROMIUM_PATH) return env.CHROMIUM_PATH; // as given: a wrong path should fail loudly, not be skipped
  for (const path of ['/usr/bin/chromium', '/usr/bin/chromium-browser', '/usr/bin/google-chrome']) {
    if (existsSync(path)) return path;
  }
  // The revision this playwright-core expects, then any other Playwright left in its cache.
  if (existsSync(chromium.executablePath())) return chromium.executablePath();
  const cache = env.PLAYWRIGHT_BROWSERS_PATH || join(homedir(), '.cache', 'ms-playwright');
  const builds = existsSync(cache) ? readdirSync(cache).filter((d) => /^chromium(_headless_shell)?-\d+$/.test(d)).sort().reverse() : [];
  for (const build of builds) {
    for (const binary of ['chrome-linux64/chrome', 'chrome-linux/chrome', 'chrome-linux/headless_shell', 'chrome-headless-shell-linux64/chrome-headless-shell']) {
      if (existsSync(join(cache, build, binary))) return join(cache, build, binary);
    }
  }
  return undefined;
}

/** The one line `npm test` prints (from global setup) when the browser tests cannot run here. */
export function browserMissingLine(): string {
  return `browser tests (test/*browser*.e2e-spec.ts) did not run: no Chromium found; ${INSTALL_HINT}`;
}

/**
 * A headless Chromium, or undefined when this machine has none and CI is not set: the browser tests then
 * return at once (global setup has said so in one line). Under CI=true a missing browser fails the test.
 */
export async function launchChromium(): Promise<Browser | undefined> {
  const executablePath = findChromium();
  if (!executablePath) {
    if (isCi()) throw new Error(`CI=true and no Chromium found: ${INSTALL_HINT}`);
    return undefined;
  }
  return chromium.launch({
    executablePath,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}

export function isCi(env: NodeJS.ProcessEnv = process.env): boolean {
  return !!env.CI && !/^(0|false)$/i.test(env.CI);
}

let axeSource: string | undefined;

/** axe-core's serious and critical violations on the page as it is, one line each. */
export async function axeViolations(page: Page): Promise<string[]> {
  axeSource ??= readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');
  // Through the DevTools protocol, which the page's CSP does not govern (a script tag would be refused).
  await page.evaluate(axeSource);
  const results = await page.evaluate(async () => (globalThis as any).axe.run({ resultTypes: ['violations'] }));
  return (results.violations as { id: string; impact: string; nodes: { target: string[] }[] }[])
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}
