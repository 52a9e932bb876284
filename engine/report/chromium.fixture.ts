// Headless Chromium for the page tests: the system's browser (Debian's `chromium`, or the
// one TENSORTUNE_CHROMIUM names) driven by playwright-core, which downloads no browser
// of its own. A test calls launchChromium() and skips with the reason it gives when there
// is none (.ci/run installs it with apt-get where it can).

import { execFileSync } from 'node:child_process';
import type { Browser } from 'playwright-core';

/** The Chromium executable: TENSORTUNE_CHROMIUM, else the first of chromium, chromium-browser, google-chrome on PATH. */
export function findChromium(): string | undefined {
  if (process.env.TENSORTUNE_CHROMIUM) return process.env.TENSORTUNE_CHROMIUM;
  for (const name of ['chromium', 'chromium-browser', 'google-chrome']) {
    try {
      return execFileSync('sh', ['-c', `command -v ${name}`], { encoding: 'utf8' }).trim() || undefined;
    } catch { /* not on PATH */ }
  }
  return undefined;
}

/** A headless browser, or why there is none. */
export async function launchChromium(): Promise<{ browser: Browser } | { why: string }> {
  const executablePath = findChromium();
  if (!executablePath) return { why: 'no Chromium (apt-get install chromium, or set TENSORTUNE_CHROMIUM)' };
  let chromium: typeof import('playwright-core').chromium;
  try {
    ({ chromium } = await import('playwright-core'));
  } catch {
    return { why: 'playwright-core is not installed (npm ci)' };
  }
  // --no-sandbox: CI containers run as root, where Chromium's sandbox refuses to start.
  return { browser: await chromium.launch({ executablePath, args: ['--no-sandbox'] }) };
}
