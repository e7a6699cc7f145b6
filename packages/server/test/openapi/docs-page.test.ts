import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import { launchChromium } from "@plantstore/test-support/chromium";
import type { BrowserContext } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { DOCS_PATHS } from "../../src/http/docs-page.ts";
import { rawRequest, startTestServer, type TestServer, TOKEN } from "../support/harness.ts";

const ARTIFACTS = fileURLToPath(new URL("../../../../test-artifacts/", import.meta.url));

/** Every URL a page asked for, and every Content-Security-Policy violation and script error it saw. */
type PageRecord = { requests: string[]; violations: string[]; errors: string[] };

/** Chromium (see @plantstore/test-support/chromium; without it this test fails, never skips), recording what its pages do. */
async function openBrowser(): Promise<{ context: BrowserContext; record: PageRecord; close(): Promise<void> }> {
  const { context, close } = await launchChromium({ viewport: { width: 1280, height: 900 } });
  const record: PageRecord = { requests: [], violations: [], errors: [] };
  context.on("request", (request) => record.requests.push(request.url()));
  await context.exposeFunction("__recordViolation", (text: string) => record.violations.push(text));
  await context.addInitScript(() => {
    document.addEventListener("securitypolicyviolation", (event) => {
      (window as unknown as { __recordViolation(text: string): void }).__recordViolation(
        `${event.violatedDirective} blocked ${event.blockedURI}`,
      );
    });
  });
  context.on("page", (page) => page.on("pageerror", (error) => record.errors.push(error.message)));
  return { context, record, close };
}

/** Requests that left the page's origin; `data:` and `blob:` URLs never touch the network. */
function foreignRequests(record: PageRecord, origin: string): string[] {
  return record.requests.filter(
    (url) => !url.startsWith("data:") && !url.startsWith("blob:") && new URL(url).origin !== origin,
  );
}

let server: TestServer;
let browser: Awaited<ReturnType<typeof openBrowser>>;
// One server and one browser for the file: a launch of Chromium is most of a browser test's time.
// Each browser test opens its own page and starts from an empty record (see `freshPage`).
beforeAll(async () => {
  [server, browser] = await Promise.all([startTestServer(), openBrowser()]);
}, 60_000);
afterAll(async () => {
  await Promise.all([server?.close(), browser?.close()]);
});

/** A new page, with the record of earlier tests' pages cleared; closed when the test ends. */
async function freshPage(onTestFinished: (cleanup: () => Promise<void>) => void) {
  browser.record.requests.length = 0;
  browser.record.violations.length = 0;
  browser.record.errors.length = 0;
  const page = await browser.context.newPage();
  onTestFinished(() => page.close());
  return page;
}

describe("GET /docs", () => {
  it("answers the page and its assets without a token, under a CSP that forbids other origins", async () => {
    for (const path of DOCS_PATHS) {
      const response = await rawRequest(server.url, { method: "GET", path });
      expect(response.status, path).toBe(200);
      const csp = String(response.headers["content-security-policy"]);
      expect(csp).toContain("default-src 'none'");
      // Every source in the policy is this origin, data: or nothing: never a host.
      const sources = csp.split(";").flatMap((directive) => directive.trim().split(/\s+/).slice(1));
      expect(sources.filter((s) => !["'self'", "'none'", "data:"].includes(s))).toEqual([]);
    }
    const page = await rawRequest(server.url, { method: "GET", path: "/docs" });
    expect(page.headers["content-type"]).toBe("text/html; charset=utf-8");
    expect(page.text).not.toMatch(/https?:\/\//);
  });

  it("revalidates assets by ETag and gzips them for browsers that accept it", async () => {
    const first = await rawRequest(server.url, {
      method: "GET",
      path: "/docs/swagger-ui-bundle.js",
      headers: { "accept-encoding": "gzip" },
    });
    expect(first.headers["content-encoding"]).toBe("gzip");
    const etag = String(first.headers["etag"]);
    const again = await rawRequest(server.url, {
      method: "GET",
      path: "/docs/swagger-ui-bundle.js",
      headers: { "if-none-match": etag },
    });
    expect(again.status).toBe(304);
  });

  it("lets a person authorize with a bearer token and send POST /plants from the page, with no request to another origin", async ({
    annotate,
    onTestFinished,
  }) => {
    const page = await freshPage(onTestFinished);
    const sent: Array<{ method: string; url: string; authorization: string | undefined }> = [];
    page.on("request", (request) => {
      if (new URL(request.url()).pathname === "/plants") {
        sent.push({
          method: request.method(),
          url: request.url(),
          authorization: request.headers()["authorization"],
        });
      }
    });
    await page.goto(`${server.url}/docs`);

    const operation = page.locator(".opblock.opblock-post").filter({ hasText: "/plants" });
    await operation.waitFor();

    await page.locator(".auth-wrapper button.authorize").click();
    const dialog = page.locator(".dialog-ux .modal-ux");
    await dialog.locator("input").first().fill(TOKEN);
    await dialog.locator("button.authorize").click();
    await dialog.locator("button.btn-done").click();

    await operation.locator(".opblock-summary").click();
    const body = operation.locator("textarea.body-param__text");
    await body.fill('{"id": 4242, "name": "Fern", "tag": "fern"}');
    await operation.locator("button.execute").click();

    const live = operation.locator(".live-responses-table .response");
    await expect
      .poll(() => live.locator(".response-col_status").first().textContent(), { timeout: 20_000 })
      .toContain("200");
    expect(await live.locator(".response-col_description").first().textContent()).toContain("Fern");

    mkdirSync(ARTIFACTS, { recursive: true });
    const screenshot = join(ARTIFACTS, "docs-page.png");
    await page.screenshot({ path: screenshot, fullPage: true });
    process.stdout.write(`screenshot of /docs after POST /plants: ${screenshot}\n`);
    // A note only: an attachment would make vitest copy the picture into the package folder.
    await annotate(`screenshot: ${screenshot}`);

    expect(sent).toEqual([{ method: "POST", url: `${server.url}/plants`, authorization: `Bearer ${TOKEN}` }]);
    const stored = await server.send({
      method: "GET",
      path: "/plants",
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(stored.json).toEqual([{ id: 4242, name: "Fern", tag: "fern" }]);

    expect(browser.record.requests.length).toBeGreaterThan(3);
    expect(foreignRequests(browser.record, server.url)).toEqual([]);
    expect(browser.record.violations).toEqual([]);
    expect(browser.record.errors).toEqual([]);
  }, 120_000);

  it("would notice a request to another origin (the check can fail)", async ({ onTestFinished }) => {
    const page = await freshPage(onTestFinished);
    // A loopback address that is another origin; nothing listens on port 9, so it costs nothing.
    await page.setContent('<img src="http://127.0.0.2:9/pixel.png">');
    await expect.poll(() => foreignRequests(browser.record, server.url)).toEqual(["http://127.0.0.2:9/pixel.png"]);
  }, 60_000);
});
