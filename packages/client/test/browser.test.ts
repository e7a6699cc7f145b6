import type { RunningServer } from "@plantstore/server";
import * as plantStoreServer from "@plantstore/server";
import { type Chromium, launchChromium } from "@plantstore/test-support/chromium";
import { startFaultProxy } from "@plantstore/test-support/fault-proxy";
import { startRealServer } from "@plantstore/test-support/real-server";
import { TEST_TOKEN as TOKEN } from "@plantstore/test-support/test-config";
import type { BrowserContext, Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import type * as ClientModule from "../src/index.ts";
import { type ModuleServer, startModuleServer } from "./module-server.ts";

/**
 * The README's promise that the client "runs in current browsers", checked in one: the client's
 * built ESM (dist/, as published) loaded through an import map in Debian's chromium, from another
 * origin than the API's, so every call also goes through the server's CORS answers for real.
 * No bundler: only its CommonJS dependency, http-link-header, is wrapped as a module (see
 * module-server.ts), as every bundler and Node's own ESM loader do.
 *
 * Chromium is driven by playwright-core (which downloads no browser of its own); without
 * /usr/bin/chromium this test fails, never skips (`bash scripts/run.sh test` installs it).
 */

/** What the page's module script leaves on `window` (see module-server.ts). */
type PageGlobals = {
  plantStoreClient?: typeof ClientModule;
  plantStoreClientError?: string;
  /** What the watch in the page has received so far, as `<type> <position> <id>`. */
  watched?: string[];
};

/** An outcome of a client call in the page, in values that cross from the page to Node unchanged. */
type Outcome =
  | { resolved: string }
  | {
      rejected: {
        isPlantStoreError: boolean;
        name: string;
        status: unknown;
        code: unknown;
        codeName: unknown;
        message: string;
        currentETag?: unknown;
      };
    };

type ClientMethod = "createPlant" | "listPlants" | "deletePlant" | "getPlant" | "updatePlant";

/** Uncaught page errors and requests that got no response at all (a CORS refusal is one). */
type PageRecord = { errors: string[]; failed: string[] };

/** Opens the module server's page and waits until its import of @plantstore/client settled. */
async function openClientPage(
  context: BrowserContext,
  modules: ModuleServer,
): Promise<{ page: Page; record: PageRecord }> {
  const page = await context.newPage();
  const record: PageRecord = { errors: [], failed: [] };
  page.on("pageerror", (error) => record.errors.push(error.message));
  page.on("requestfailed", (request) =>
    record.failed.push(`${request.method()} ${request.url()}: ${request.failure()?.errorText}`),
  );
  await page.goto(modules.pageUrl);
  await page.waitForFunction(() => {
    const globals = window as unknown as PageGlobals;
    return globals.plantStoreClient !== undefined || globals.plantStoreClientError !== undefined;
  });
  expect(await page.evaluate(() => (window as unknown as PageGlobals).plantStoreClientError)).toBeUndefined();
  return { page, record };
}

/**
 * Runs one client call in the page with a fresh client. Arguments cross as JSON, so a bigint is
 * written `"<digits>n"` and revived in the page; the answer comes back as JSON text written the
 * same way, so Node sees exactly what the page held (a rounded id would show its other digits).
 */
async function callInPage(page: Page, baseUrl: string, method: ClientMethod, ...args: unknown[]): Promise<Outcome> {
  return page.evaluate(
    async ({ baseUrl, token, method, args }) => {
      const client = (window as unknown as PageGlobals).plantStoreClient!;
      const store = client.createPlantStoreClient({ baseUrl, token });
      const revive = (value: unknown): unknown =>
        typeof value === "string" && /^-?\d+n$/.test(value)
          ? BigInt(value.slice(0, -1))
          : Array.isArray(value)
            ? value.map(revive)
            : value !== null && typeof value === "object"
              ? Object.fromEntries(Object.entries(value).map(([k, v]) => [k, revive(v)]))
              : value;
      const show = (value: unknown) =>
        JSON.stringify(value, (_key, v: unknown) => (typeof v === "bigint" ? `${v}n` : v)) ?? "undefined";
      const invoke = store[method].bind(store) as (...a: unknown[]) => Promise<unknown>;
      return invoke(...args.map(revive)).then(
        (value) => ({ resolved: show(value) }),
        (error: Error & { status?: unknown; code?: unknown; codeName?: unknown; currentETag?: unknown }) => ({
          rejected: {
            isPlantStoreError: error instanceof client.PlantStoreError,
            name: error.name,
            status: error.status,
            code: error.code,
            codeName: error.codeName,
            message: error.message,
            currentETag: error.currentETag,
          },
        }),
      );
    },
    { baseUrl, token: TOKEN, method, args },
  );
}

const ABOVE_2_53 = 9007199254740993n; // 2^53 + 1: as a JavaScript number it would be 2^53.

let modules: ModuleServer;
let server: RunningServer;
let browser: Chromium;
let page: Page;
let record: PageRecord;
/** A client call in the test page, against the test server. */
const call = (method: ClientMethod, ...args: unknown[]) => callInPage(page, server.url, method, ...args);
beforeAll(async () => {
  modules = await startModuleServer();
  server = await startRealServer(plantStoreServer, { config: { corsOrigins: [modules.origin] } });
  browser = await launchChromium();
  ({ page, record } = await openClientPage(browser.context, modules));
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await server?.close();
  await modules?.close();
});

describe("@plantstore/client's built ESM in chromium, against the real server by CORS", () => {
  it("loads dist/ and its dependencies through the import map, not the TypeScript sources", () => {
    expect(modules.served).toEqual(
      expect.arrayContaining([
        "/modules/@plantstore/client/dist/index.js",
        "/modules/@plantstore/schema/dist/index.js",
        "/modules/zod/index.js",
        "/commonjs/http-link-header.js",
      ]),
    );
    expect(new URL(server.url).origin).not.toBe(modules.origin);
  });

  it("createPlant sends an id above 2^53 given as a bigint and resolves with the Plant", async () => {
    const outcome = await call("createPlant", { id: `${ABOVE_2_53}n`, name: "Fern", tag: "fern" });
    expect(outcome).toEqual({ resolved: '{"name":"Fern","tag":"fern"}' });
    // Read below the HTTP layer: a rounded id would have been stored as 2^53.
    await expect(server.store.get(ABOVE_2_53)).resolves.toMatchObject({ id: ABOVE_2_53, name: "Fern", tag: "fern" });
    await expect(server.store.get(2n ** 53n)).resolves.toBeUndefined();
  });

  it("listPlants answers exact bigint ids, and the next page from the Link header the server exposes by CORS", async () => {
    for (const id of [ABOVE_2_53 + 2n, 2n ** 63n - 1n]) {
      expect(await call("createPlant", { id: `${id}n`, name: "Moss", tag: "list" })).toEqual({
        resolved: '{"name":"Moss","tag":"list"}',
      });
    }
    const first = await call("listPlants", { tag: "list", limit: 1 });
    expect(first).toEqual({
      resolved:
        '{"plants":[{"id":"9007199254740995n","name":"Moss","tag":"list"}],"next":{"limit":1,"after":"9007199254740995n","tag":"list"}}',
    });
    const last = await call("listPlants", { tag: "list", limit: 1, after: "9007199254740995n" });
    expect(last).toEqual({ resolved: '{"plants":[{"id":"9223372036854775807n","name":"Moss","tag":"list"}]}' });
  });

  it("createPlant with another plant under a stored id rejects with PlantStoreError 409 and the numeric code", async () => {
    const outcome = await call("createPlant", { id: `${ABOVE_2_53}n`, name: "Aloe" });
    expect(outcome).toEqual({
      rejected: {
        isPlantStoreError: true,
        name: "PlantStoreError",
        status: 409,
        code: 40900,
        codeName: "ID_CONFLICT",
        message: expect.stringMatching(/already stored/),
      },
    });
    await expect(server.store.get(ABOVE_2_53)).resolves.toMatchObject({ name: "Fern" });
  });

  it("deletePlant deletes the exact id, then rejects with PlantStoreError 404", async () => {
    const doomed = ABOVE_2_53 + 4n; // 2^53 + 5; its neighbour 2^53 + 4 is what a rounded id would hit.
    for (const id of [doomed, doomed - 1n]) {
      expect(await call("createPlant", { id: `${id}n`, name: "Ivy" })).toEqual({ resolved: '{"name":"Ivy"}' });
    }
    expect(await call("deletePlant", `${doomed}n`)).toEqual({ resolved: "undefined" });
    await expect(server.store.get(doomed)).resolves.toBeUndefined();
    await expect(server.store.get(doomed - 1n)).resolves.toMatchObject({ id: doomed - 1n, name: "Ivy" });
    expect(await call("deletePlant", `${doomed}n`)).toMatchObject({
      rejected: { isPlantStoreError: true, status: 404, code: 40401, codeName: "PLANT_NOT_FOUND" },
    });
  });

  it("getPlant reads the ETag the server exposes by CORS; updatePlant's If-Match and merge patch pass its preflight; a stale one rejects with the current ETag", async () => {
    const id = ABOVE_2_53 + 10n;
    expect(await call("createPlant", { id: `${id}n`, name: "Basil", tag: "herb" })).toEqual({
      resolved: '{"name":"Basil","tag":"herb"}',
    });
    const read = await call("getPlant", `${id}n`);
    const { etag } = JSON.parse((read as { resolved: string }).resolved) as { etag: string };
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
    expect(read).toEqual({
      resolved: JSON.stringify({ notModified: false, plant: { id: `${id}n`, name: "Basil", tag: "herb" }, etag }),
    });
    expect(await call("getPlant", `${id}n`, { ifNoneMatch: etag })).toEqual({
      resolved: JSON.stringify({ notModified: true, etag }),
    });
    const changed = await call("updatePlant", `${id}n`, { tag: null }, { ifMatch: etag });
    const { etag: current } = JSON.parse((changed as { resolved: string }).resolved) as { etag: string };
    expect(changed).toEqual({ resolved: JSON.stringify({ plant: { id: `${id}n`, name: "Basil" }, etag: current }) });
    await expect(server.store.get(id)).resolves.toEqual({ id, name: "Basil" });
    expect(await call("updatePlant", `${id}n`, { name: "Thai basil" }, { ifMatch: etag })).toMatchObject({
      rejected: { isPlantStoreError: true, status: 412, code: 41200, currentETag: current },
    });
  });

  it("ran with no uncaught error and no request left without an answer", () => {
    expect(record.errors).toEqual([]);
    expect(record.failed).toEqual([]);
  });

  it("would notice a page origin the server does not allow (the CORS check can fail)", async () => {
    await using elsewhere = await startModuleServer();
    const other = await openClientPage(browser.context, elsewhere);
    const outcome = await callInPage(other.page, server.url, "createPlant", { id: "77n", name: "Blocked" });
    expect(outcome).toMatchObject({
      rejected: {
        isPlantStoreError: false,
        name: "PlantStoreProtocolError",
        status: undefined,
        message: expect.stringMatching(/^no response from /),
      },
    });
    // The preflight was refused, so the POST itself was never sent.
    await expect(server.store.get(77n)).resolves.toBeUndefined();
    expect(other.record.failed).toEqual([expect.stringMatching(/^POST http:\/\/127\.0\.0\.1:\d+\/plants: /)]);
    await other.page.close();
  });

  it("watchPlants streams changes with exact ids, and resumes with Last-Event-ID through CORS after a cut", async () => {
    // Through a proxy whose connections the test cuts; the page's origin is allowed by CORS.
    await using proxy = await startFaultProxy({ host: "127.0.0.1", port: Number(new URL(server.url).port) });
    const watching = await openClientPage(browser.context, modules);
    const first = ABOVE_2_53 + 100n;
    await server.store.create({ id: first, name: "Streamed", tag: "feed" });
    const outcome = watching.page.evaluate(
      async ({ baseUrl, token }) => {
        const globals = window as unknown as PageGlobals;
        const store = globals.plantStoreClient!.createPlantStoreClient({ baseUrl, token });
        globals.watched = [];
        for await (const event of store.watchPlants({ after: 0n, tag: "feed", maxReconnectDelayMs: 20 })) {
          const id = event.type === "plant.deleted" ? event.id : event.type === "reset" ? "" : event.plant.id;
          globals.watched.push(`${event.type} ${event.position} ${id}`);
          if (globals.watched.length === 3) break;
        }
        return globals.watched;
      },
      { baseUrl: `http://127.0.0.1:${proxy.port}`, token: TOKEN },
    );
    await watching.page.waitForFunction(() => (window as unknown as PageGlobals).watched?.length === 1);
    proxy.cut();
    await server.store.create({ id: first + 1n, name: "After the cut", tag: "feed" });
    await server.store.delete(first);
    const seen = await outcome;
    expect(seen).toEqual([
      expect.stringMatching(new RegExp(`^plant\\.created \\d+ ${first}$`)),
      expect.stringMatching(new RegExp(`^plant\\.created \\d+ ${first + 1n}$`)),
      expect.stringMatching(new RegExp(`^plant\\.deleted \\d+ ${first}$`)),
    ]);
    // The last two were written after the cut, so they came over a new connection whose Last-Event-ID
    // passed the CORS preflight (without the server allowing that header, this waits in vain).
    expect(watching.record.errors).toEqual([]);
    await watching.page.close();
  });
});
