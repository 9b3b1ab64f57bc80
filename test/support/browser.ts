import { Browser, chromium } from 'playwright-core';

/** Debian's headless Chromium, as CI installs it (CHROMIUM_PATH overrides the path). */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}
