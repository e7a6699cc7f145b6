import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { type BrowserContext, chromium } from "playwright-core";

/**
 * Debian's chromium, driven by playwright-core (which downloads no browser of its own).
 * `scripts/run.sh test` installs it when it is missing; without it a browser test fails, never skips.
 */
const CHROMIUM = "/usr/bin/chromium";
const CHROMIUM_ARGS = [
  "--headless",
  "--no-sandbox",
  "--disable-gpu",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--no-first-run",
];

export type Chromium = { context: BrowserContext; close: () => Promise<void>; [Symbol.asyncDispose](): Promise<void> };

/** Headless chromium with a fresh profile in a temporary folder, removed on close. */
export async function launchChromium(
  options: { viewport?: { width: number; height: number } } = {},
): Promise<Chromium> {
  if (!existsSync(CHROMIUM)) {
    throw new Error(`${CHROMIUM} is missing: \`bash scripts/run.sh test\` installs it (or: apt-get install chromium)`);
  }
  const profile = mkdtempSync(join(tmpdir(), "plantstore-chromium-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    args: CHROMIUM_ARGS,
    headless: true,
    ...options,
  });
  const close = async () => {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  };
  return { context, close, [Symbol.asyncDispose]: close };
}
