// Headless Chromium for the browser tests: Debian's /usr/bin/chromium driven by
// playwright-core (which never downloads a browser of its own).
import { chromium } from 'playwright-core';

export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

export function launchBrowser() {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    // --no-sandbox: we run as root; --disable-gpu: no GPU here; --disable-background-networking:
    // the machine has no network beyond localhost, and Chromium's background calls fail loudly.
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}

// A page that fails the test on any console error or uncaught exception: call
// errors() at the end and expect an empty list.
export async function openPage(browser, url) {
  const page = await browser.newPage();
  const problems = [];
  page.on('console', (m) => {
    if (m.type() === 'error') problems.push(`console.error: ${m.text()}`);
  });
  page.on('pageerror', (e) => problems.push(`uncaught: ${e.message}`));
  await page.goto(url);
  return { page, errors: () => problems };
}
