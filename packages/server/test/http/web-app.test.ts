import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { startTestServer, type TestServer } from "../support/harness.ts";

/**
 * PLANTSTORE_WEB_DIR: the built web console at /app on the API port (src/http/web-app.ts). The
 * console's own browser tests (apps/web/test) load the real build this way; this file pins the
 * serving itself on a folder made here.
 */
const INDEX = '<!doctype html><script type="module" src="/app/assets/index-abc123.js"></script>';
const SCRIPT = "console.log('plants');\n".repeat(50);

let dir: string;
let server: TestServer;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "plantstore-web-dir-"));
  mkdirSync(join(dir, "assets"));
  writeFileSync(join(dir, "index.html"), INDEX);
  writeFileSync(join(dir, "assets", "index-abc123.js"), SCRIPT);
  server = await startTestServer({ webDir: dir });
});
afterAll(async () => {
  await server?.close();
  rmSync(dir, { recursive: true, force: true });
});

describe("GET /app with PLANTSTORE_WEB_DIR set", () => {
  it("answers the page at /app and /app/ without a token, revalidated each time, under a strict CSP", async () => {
    for (const path of ["/app", "/app/"]) {
      const response = await fetch(`${server.url}${path}`);
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(response.headers.get("cache-control")).toBe("no-cache");
      expect(response.headers.get("content-security-policy")).toMatch(/^default-src 'none'; script-src 'self';/);
      expect(await response.text()).toBe(INDEX);
    }
  });

  it("answers the hashed assets gzipped and cacheable for good, and 304 to their ETag", async () => {
    const response = await fetch(`${server.url}/app/assets/index-abc123.js`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(response.headers.get("content-encoding")).toBe("gzip");
    expect(response.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    expect(await response.text()).toBe(SCRIPT);
    // Not fetch: a conditional request makes it add `Cache-Control: no-cache`, which forbids a 304.
    const again = await server.send({
      method: "GET",
      path: "/app/assets/index-abc123.js",
      headers: { "If-None-Match": response.headers.get("etag")! },
    });
    expect(again.status).toBe(304);
  });

  it("answers 404 for any other path under /app, and files outside the folder stay unreachable", async () => {
    for (const path of ["/app/assets/missing.js", "/app/..%2Fpackage.json", "/app/assets/../../etc/passwd"]) {
      const response = await fetch(`${server.url}${path}`);
      expect(response.status).toBe(404);
      expect(await response.json()).toMatchObject({ error: 40400 });
    }
  });
});

describe("PLANTSTORE_WEB_DIR", () => {
  it("unset: no /app", async () => {
    await using other = await startTestServer();
    expect((await fetch(`${other.url}/app/`)).status).toBe(404);
  });

  it("naming a folder without a built app: the server does not start, and says how to build it", async () => {
    const empty = mkdtempSync(join(tmpdir(), "plantstore-web-empty-"));
    try {
      await expect(startTestServer({ webDir: empty })).rejects.toThrow(/has no index\.html: build it with/);
    } finally {
      rmSync(empty, { recursive: true, force: true });
    }
  });
});
