import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { encodePageCursor as cursor } from "@plantstore/schema";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import type { Principal } from "../auth/principal.ts";
import { toApiError } from "../errors.ts";
import type { Preconditions } from "../preconditions.ts";
import { openStore } from "../storage/open-store.ts";
import type { PlantStore } from "../storage/plant-store.ts";
import { createCallerFactory } from "../trpc.ts";
import { appRouter } from "./root.ts";

/**
 * The procedures called in process through tRPC's createCaller, on a real SQLite store in a scratch
 * file: paging, cursors, tag filters, replays, conflicts and scopes are the router's logic, and
 * need no socket. What HTTP adds (status lines, the Link header as sent, exact body text, query
 * strings) is tested through the real server in test/plants/.
 */
const createCaller = createCallerFactory(appRouter);

const principal = (scopes: string[], fields: Partial<Principal> = {}): Principal => ({
  kind: "static",
  tokenId: "static:test",
  scopes,
  expiresAt: null,
  rateLimitKey: null,
  ...fields,
});
const WRITER = principal(["plants:read", "plants:write"]);

let dir: string;
let store: PlantStore;
beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "plantstore-router-"));
  store = await openStore(`sqlite:${join(dir, "plants.db")}`);
});
afterAll(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A caller for one request: the headers a procedure sets land in `responseHeaders`, as the adapter sees them. */
function call(who: Principal | null = WRITER, preconditions: Preconditions = {}) {
  const responseHeaders = new Map<string, string>();
  const response: { status?: number } = {};
  return {
    api: createCaller({ principal: who, store, responseHeaders, preconditions, response }),
    responseHeaders,
    response,
  };
}

type ListInput = { limit?: string; after?: string; tag?: string };

/** One page: its ids, and the `Link` header's value when the procedure set one. */
async function list(input: ListInput): Promise<{ ids: bigint[]; link: string | undefined }> {
  const { api, responseHeaders } = call();
  const page = await api.plants.list(input);
  return { ids: page.map((p) => BigInt(p.id)), link: responseHeaders.get("Link") };
}

/** The query of a next link, as the adapter would hand it back to the procedure. */
function following(link: string | undefined): ListInput {
  const match = /^<\/plants\?([^>]*)>; rel="next"$/.exec(link ?? "");
  if (match?.[1] === undefined) throw new Error(`not a next link: ${link}`);
  return Object.fromEntries(new URLSearchParams(match[1]));
}

const next = (query: string) => `</plants?${query}>; rel="next"`;

/** Creates through the procedure, `concurrency` at a time, as that many clients would. */
async function createMany(ids: bigint[], tag: string, concurrency = 32): Promise<void> {
  const { api } = call();
  let index = 0;
  const worker = async () => {
    while (index < ids.length) {
      const id = ids[index++]!;
      expect(await api.plants.create({ id, name: `p${id}`, tag })).toEqual({ name: `p${id}`, tag });
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

/** The catalogue answer a thrown value becomes (errors.ts), as the adapter would send it. */
async function refusal(promise: Promise<unknown>) {
  const error = await promise.then(
    () => undefined,
    (thrown: unknown) => thrown,
  );
  expect(error, "the call was expected to be refused").toBeDefined();
  const answer = toApiError(error);
  return { status: answer.status, ...answer.body, headers: answer.headers };
}

describe("plants.list: pages and their next link", () => {
  // Moved from test/plants/list-and-delete.test.ts (GET /plants), with the Link compared whole.
  it("accepts limit 1 and 1000, and defaults to 100", async () => {
    await createMany(
      Array.from({ length: 150 }, (_, i) => BigInt(1_000_000 + i)),
      "bulk",
    );
    expect((await list({ tag: "bulk", limit: "1" })).ids).toHaveLength(1);
    expect((await list({ tag: "bulk", limit: "1000" })).ids).toHaveLength(150);
    const firstPage = await list({ tag: "bulk" });
    expect(firstPage.ids).toHaveLength(100);
    expect(firstPage.link).toBe(next(`limit=100&after=${cursor(1_000_099n)}&tag=bulk`));
  });

  it("has no Link when the last page is exactly full, and one when a single plant more follows", async () => {
    await createMany(
      Array.from({ length: 10 }, (_, i) => BigInt(500_000 + i)),
      "exact",
    );
    const full = await list({ tag: "exact", limit: "10" });
    expect(full.ids).toHaveLength(10);
    expect(full.link).toBeUndefined();
    const short = await list({ tag: "exact", limit: "9" });
    expect(short.ids).toHaveLength(9);
    expect(short.link).toBe(next(`limit=9&after=${cursor(500_008n)}&tag=exact`));
    const rest = await list(following(short.link));
    expect(rest.ids).toEqual([500_009n]);
    expect(rest.link).toBeUndefined();
    const halves = await list({ tag: "exact", limit: "5" });
    const second = await list(following(halves.link));
    expect(second.ids).toEqual([500_005n, 500_006n, 500_007n, 500_008n, 500_009n]);
    expect(second.link).toBeUndefined();
  });

  it("answers at most 1000 with limit=1000, and a Link when more follow", async () => {
    await createMany(
      Array.from({ length: 1001 }, (_, i) => BigInt(600_000 + i)),
      "kilo",
    );
    const first = await list({ tag: "kilo", limit: "1000" });
    expect(first.ids).toHaveLength(1000);
    expect(first.link).toBe(next(`limit=1000&after=${cursor(600_999n)}&tag=kilo`));
    const rest = await list(following(first.link));
    expect(rest.ids).toEqual([601_000n]);
    expect(rest.link).toBeUndefined();
  });

  it("walks 10,000 plants page by page with no gap or repeat while others are being created", async () => {
    const ids = Array.from({ length: 10_000 }, (_, i) => BigInt(2_000_000 + i * 3));
    await createMany(ids, "walk");
    // Meanwhile: new plants land between and after the existing ones.
    const writer = createMany(
      Array.from({ length: 2_000 }, (_, i) => BigInt(2_000_001 + i * 3)),
      "walk",
      8,
    );
    const seen: bigint[] = [];
    let input: ListInput | undefined = { tag: "walk", limit: "250" };
    let pages = 0;
    while (input !== undefined) {
      const page = await list(input);
      seen.push(...page.ids);
      input = page.link === undefined ? undefined : following(page.link);
      pages++;
    }
    await writer;
    const seenSet = new Set(seen);
    expect(seenSet.size).toBe(seen.length); // no repeats
    for (const id of ids) expect(seenSet.has(id)).toBe(true); // no gaps among those there all along
    expect([...seen].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))).toEqual(seen); // ordered by id
    expect(pages).toBeGreaterThanOrEqual(40);
  }, 120_000);

  it("starts after the cursor or the decimal id alike, and keeps the filter's tag in the link", async () => {
    const tag = "a&b c/é?=#+";
    const ids = [2n ** 53n + 10n, 2n ** 53n + 11n, 2n ** 53n + 12n];
    await createMany(ids, tag);
    await createMany([2n ** 53n + 13n], "other");
    const first = await list({ tag, limit: "1" });
    expect(first.ids).toEqual([ids[0]]);
    expect(following(first.link)).toEqual({ limit: "1", after: cursor(ids[0]!), tag });
    const byCursor = await list({ tag, after: cursor(ids[0]!) });
    const byId = await list({ tag, after: String(ids[0]) });
    expect(byCursor).toEqual({ ids: ids.slice(1), link: undefined });
    expect(byId).toEqual(byCursor);
  });

  it("lists only plants with exactly the tag asked for", async () => {
    await createMany([3_000_000n], "Fern");
    await createMany([3_000_001n], "fern");
    await createMany([3_000_002n], "fern ");
    expect((await list({ tag: "fern", after: "2999999", limit: "10" })).ids).toEqual([3_000_001n]);
  });

  it("refuses a limit or cursor it cannot read, naming the parameter in its own words", async () => {
    const { api } = call();
    expect(await refusal(api.plants.list({ limit: "1001" }))).toMatchObject({
      status: 400,
      message: "limit must be an integer from 1 to 1000",
    });
    expect(await refusal(api.plants.list({ after: "v1.AAAAAAAAAAd" }))).toMatchObject({
      status: 400,
      message: "after must be the cursor of a Link header's next link, or a decimal id (int64)",
    });
  });
});

describe("plants.create and plants.delete", () => {
  it("answer a replay of the same plant like its creation, and refuse another plant under its id (409)", async () => {
    const { api } = call();
    expect(await api.plants.create({ id: 4_000_000n, name: "Fern" })).toEqual({ name: "Fern" });
    expect(await api.plants.create({ id: 4_000_000n, name: "Fern" })).toEqual({ name: "Fern" });
    for (const other of [{ name: "Moss" }, { name: "Fern", tag: "t" }])
      expect(await refusal(api.plants.create({ id: 4_000_000n, ...other }))).toEqual({
        status: 409,
        error: 40900,
        message: "a plant with id 4000000 is already stored with a different name or tag",
        headers: {},
      });
    expect(await store.get(4_000_000n)).toEqual({ id: 4_000_000n, name: "Fern" });
  });

  it("delete the plant, then answer 404 (40401), and free the id for another plant", async () => {
    const { api } = call();
    expect(await api.plants.create({ id: 4_100_000n, name: "Doomed" })).toEqual({ name: "Doomed" });
    expect(await api.plants.delete({ id: "4100000" })).toBeUndefined();
    expect(await refusal(api.plants.delete({ id: "4100000" }))).toEqual({
      status: 404,
      error: 40401,
      message: "no plant with id 4100000 is stored",
      headers: {},
    });
    expect(await api.plants.create({ id: 4_100_000n, name: "Reborn", tag: "new" })).toEqual({
      name: "Reborn",
      tag: "new",
    });
  });
});

describe("one plant under its preconditions (If-Match, If-None-Match as the adapter parses them)", () => {
  const conditional = (preconditions: Preconditions) => call(WRITER, preconditions);

  it("get: sets the ETag, and asks for 304 when If-None-Match names it, weakly or as *", async () => {
    await call().api.plants.create({ id: 6_000_000n, name: "Read" });
    const plain = conditional({});
    expect(await plain.api.plants.get({ id: "6000000" })).toEqual({ id: 6_000_000n, name: "Read" });
    const etag = plain.responseHeaders.get("ETag")!;
    expect(etag).toBe(await store.etag({ id: 6_000_000n, name: "Read" }));
    expect(plain.response.status).toBeUndefined();
    for (const ifNoneMatch of [[etag], [`W/${etag}`], "*"] as const) {
      const cached = conditional({ ifNoneMatch });
      await cached.api.plants.get({ id: "6000000" });
      expect(cached.response.status).toBe(304);
    }
    const other = conditional({ ifNoneMatch: ['"other"'] });
    await other.api.plants.get({ id: "6000000" });
    expect(other.response.status).toBeUndefined();
  });

  it("update: 404 before 428 before 412, then the change and its new ETag", async () => {
    await call().api.plants.create({ id: 6_000_001n, name: "Before", tag: "t" });
    expect(await refusal(conditional({}).api.plants.update({ id: "6000009", name: "x" }))).toMatchObject({
      status: 404,
    });
    expect(await refusal(conditional({}).api.plants.update({ id: "6000001", name: "x" }))).toMatchObject({
      status: 428,
      error: 42800,
    });
    const etag = await store.etag({ id: 6_000_001n, name: "Before", tag: "t" });
    const stale = await refusal(conditional({ ifMatch: ['"stale"'] }).api.plants.update({ id: "6000001", tag: null }));
    expect(stale).toMatchObject({ status: 412, error: 41200, headers: { ETag: etag } });
    const fresh = conditional({ ifMatch: [etag] });
    expect(await fresh.api.plants.update({ id: "6000001", tag: null })).toEqual({ id: 6_000_001n, name: "Before" });
    expect(fresh.responseHeaders.get("ETag")).toBe(await store.etag({ id: 6_000_001n, name: "Before" }));
  });

  it("replace: 428 without a condition, 201 and Location creating, 412 creating over a stored plant", async () => {
    expect(await refusal(conditional({}).api.plants.replace({ id: "6000002", name: "x" }))).toMatchObject({
      status: 428,
    });
    const created = conditional({ ifNoneMatch: "*" });
    expect(await created.api.plants.replace({ id: "6000002", name: "New" })).toEqual({ id: 6_000_002n, name: "New" });
    expect(created.response.status).toBe(201);
    expect(created.responseHeaders.get("Location")).toBe("/plants/6000002");
    expect(
      await refusal(conditional({ ifNoneMatch: "*" }).api.plants.replace({ id: "6000002", name: "Again" })),
    ).toMatchObject({ status: 412, headers: { ETag: await store.etag({ id: 6_000_002n, name: "New" }) } });
  });
});

describe("scopes each procedure needs, read from the router itself", () => {
  type Procedure = { _def: { meta?: { scopes?: string[] }; type: string } };
  // At run time a flat map keyed by dotted path ("plants.create"); its type nests the routers.
  const procedures = Object.entries(appRouter._def.procedures as unknown as Record<string, Procedure>);
  const inputs: Record<string, unknown> = {
    "plants.create": { id: 5_000_000n, name: "scoped" },
    "plants.list": {},
    "plants.delete": { id: "5000000" },
    "plants.get": { id: "5000000" },
    "plants.update": { id: "5000000", name: "scoped" },
    "plants.replace": { id: "5000000", name: "scoped" },
    "whoami.get": {},
  };

  it("knows an input for every procedure (a new one must be added here)", () => {
    expect(procedures.map(([path]) => path).sort()).toEqual(Object.keys(inputs).sort());
    expect(Object.fromEntries(procedures.map(([path, p]) => [path, p._def.meta?.scopes ?? []]))).toEqual({
      "plants.create": ["plants:write"],
      "plants.list": ["plants:read"],
      "plants.delete": ["plants:write"],
      "plants.get": ["plants:read"],
      "plants.update": ["plants:read", "plants:write"],
      "plants.replace": ["plants:write"],
      "whoami.get": [],
    });
  });

  /** Calls a procedure by its dotted path, as the adapter does. */
  const invoke = (who: Principal | null, path: string) => {
    const [group, name] = path.split(".") as [string, string];
    const api = call(who).api as unknown as Record<string, Record<string, (input: unknown) => Promise<unknown>>>;
    return api[group]![name]!(inputs[path]);
  };

  it.each(procedures.map(([path]) => [path]))("%s refuses a call without a principal (401, 40100)", async (path) => {
    expect(await refusal(invoke(null, path))).toMatchObject({ status: 401, error: 40100 });
  });

  it.each(procedures.flatMap(([path, p]) => (p._def.meta?.scopes ?? []).map((scope) => [path, scope])))(
    "%s refuses a principal without %s (403, 40300), naming it in the challenge",
    async (path, scope) => {
      const answer = await refusal(invoke(principal(["plants:read", "plants:write"].filter((s) => s !== scope)), path));
      expect(answer).toMatchObject({ status: 403, error: 40300, message: `this operation needs the scope ${scope}` });
      expect(answer.headers["WWW-Authenticate"]).toContain(`scope="${scope}"`);
    },
  );

  it("whoami.get needs no scope, and describes the credential without its secret", async () => {
    const { api } = call(
      principal([], { kind: "opaque", tokenId: "0123456789abcdef", name: "ci", expiresAt: Date.UTC(2030, 0, 1) }),
    );
    expect(await api.whoami.get({})).toEqual({
      kind: "opaque",
      id: "0123456789abcdef",
      name: "ci",
      scopes: [],
      expiresAt: "2030-01-01T00:00:00.000Z",
    });
  });
});
