import { mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import type { BrowserContext, Locator, Page } from "playwright-core";

/** Screenshots of the main screens, kept by the test run (the root `test-artifacts/` is ignored by git). */
const ARTIFACTS = fileURLToPath(new URL("../../../../test-artifacts/web/", import.meta.url));

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** Uncaught errors of a page and requests it got no answer to, apart from those a test provoked. */
export type PageRecord = { errors: string[]; failed: string[]; requests: string[] };

/** A new tab on the console at `origin` (the server, or a proxy in front of it), recording what goes wrong. */
export async function openConsole(
  context: BrowserContext,
  origin: string,
): Promise<{ page: Page; record: PageRecord }> {
  const page = await context.newPage();
  const record: PageRecord = { errors: [], failed: [], requests: [] };
  page.on("pageerror", (error) => record.errors.push(error.message));
  page.on("request", (request) => record.requests.push(`${request.method()} ${request.url()}`));
  page.on("requestfailed", (request) =>
    record.failed.push(`${request.method()} ${request.url()}: ${request.failure()?.errorText}`),
  );
  await page.goto(`${origin}/app/`);
  return { page, record };
}

export async function signIn(page: Page, token: string): Promise<void> {
  await page.getByLabel("Token", { exact: true }).fill(token);
  await page.getByRole("button", { name: "Sign in", exact: true }).click();
}

/** The status that says whether changes made elsewhere arrive. */
export const feedStatus = (page: Page): Locator => page.getByRole("status", { name: "Live updates" });

export async function waitUntilLive(page: Page): Promise<void> {
  await feedStatus(page)
    .filter({ hasText: /^Live$/ })
    .waitFor();
}

export const createForm = (page: Page): Locator => page.getByRole("form", { name: "New plant" });
export const editForm = (page: Page, id: string): Locator => page.getByRole("form", { name: `Edit plant ${id}` });
const table = (page: Page): Locator => page.getByRole("table", { name: "Plants" });

/** The table row of the plant whose id cell reads exactly `id`. */
export function row(page: Page, id: string): Locator {
  return table(page)
    .getByRole("row")
    .filter({ has: page.getByRole("cell", { name: id, exact: true }) });
}

/** The id column, top to bottom, as the page shows it. */
export async function shownIds(page: Page): Promise<string[]> {
  return table(page).locator("tbody td.id").allTextContents();
}

export async function createThroughForm(page: Page, plant: { id: string; name: string; tag?: string }): Promise<void> {
  const form = createForm(page);
  await form.getByLabel("Id", { exact: true }).fill(plant.id);
  await form.getByLabel("Name", { exact: true }).fill(plant.name);
  await form.getByLabel("Tag", { exact: true }).fill(plant.tag ?? "");
  await form.getByRole("button", { name: "Create", exact: true }).click();
}

export async function openPlant(page: Page, id: string): Promise<Locator> {
  await page.getByRole("button", { name: `Open plant ${id}`, exact: true }).click();
  return editForm(page, id);
}

/** axe-core's scan of the page as it is now: the serious and critical violations, by rule and target. */
export async function accessibilityViolations(page: Page): Promise<string[]> {
  // Evaluated through the DevTools protocol, which the app's Content-Security-Policy does not govern.
  await page.evaluate(AXE_SOURCE);
  return page.evaluate(async () => {
    type Result = { violations: Array<{ id: string; impact: string | null; nodes: Array<{ target: unknown }> }> };
    const { axe } = window as unknown as { axe: { run(): Promise<Result> } };
    const result = await axe.run();
    return result.violations
      .filter((violation) => violation.impact === "serious" || violation.impact === "critical")
      .map(
        (violation) => `${violation.impact} ${violation.id}: ${JSON.stringify(violation.nodes.map((n) => n.target))}`,
      );
  });
}

export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(ARTIFACTS, { recursive: true });
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}
