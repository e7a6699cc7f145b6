import { INT64_MAX, INT64_MIN, type NewPlant } from "@plantstore/schema";
import type { RunningServer } from "@plantstore/server";
import * as plantStoreServer from "@plantstore/server";
import { checkedFetch } from "@plantstore/test-support/checked-fetch";
import { startRealServer } from "@plantstore/test-support/real-server";
import { TEST_TOKEN as TOKEN } from "@plantstore/test-support/test-config";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import {
  createPlantStoreClient,
  type PlantStoreClient,
  PlantStoreError,
  PlantStoreInputError,
  PlantStoreProtocolError,
} from "../src/index.ts";

let server: RunningServer;
let client: PlantStoreClient;
beforeAll(async () => {
  server = await startRealServer(plantStoreServer);
  client = createPlantStoreClient({ baseUrl: server.url, token: TOKEN, fetch: checkedFetch });
});
afterAll(async () => {
  await server.close();
});

/** Creates plants through the client, a few at a time so the server can group its commits. */
async function createAll(plants: readonly NewPlant[], concurrency = 16): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < plants.length) await client.createPlant(plants[next++]!);
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
}

const tagged = (tag: string, ids: readonly bigint[]): NewPlant[] => ids.map((id) => ({ id, name: `p${id}`, tag }));
const range = (from: bigint, count: number, step = 1n): bigint[] =>
  Array.from({ length: count }, (_, i) => from + BigInt(i) * step);
const ascending = (a: bigint, b: bigint) => (a < b ? -1 : a > b ? 1 : 0);

describe("listPlants against the real server", () => {
  it("answers one page with exact bigint ids, and the next page's query from the Link header", async () => {
    await createAll(tagged("page", [5n, 1n, 4n, 2n, 3n]));
    const first = await client.listPlants({ tag: "page", limit: 2 });
    expect(first.plants).toEqual([
      { id: 1n, name: "p1", tag: "page" },
      { id: 2n, name: "p2", tag: "page" },
    ]);
    expect(first.next).toEqual({ limit: 2, after: 2n, tag: "page" });
    const second = await client.listPlants(first.next);
    expect(second.plants.map((p) => p.id)).toEqual([3n, 4n]);
    const last = await client.listPlants(second.next);
    expect(last.plants.map((p) => p.id)).toEqual([5n]);
    expect(last.next).toBeUndefined();
  });

  it("has no next page when the last page is exactly full", async () => {
    await createAll(tagged("full", range(100n, 4)));
    const first = await client.listPlants({ tag: "full", limit: 2 });
    expect(first.next).toEqual({ limit: 2, after: 101n, tag: "full" });
    const second = await client.listPlants(first.next);
    expect(second.plants.map((p) => p.id)).toEqual([102n, 103n]);
    expect(second.next).toBeUndefined();
  });

  it("answers an empty page, without a next one, past the last plant", async () => {
    await expect(client.listPlants({ tag: "nothing-has-this-tag" })).resolves.toEqual({ plants: [], next: undefined });
  });

  it("filters by exact tag, and keeps the filter in the next page's query, whatever its characters", async () => {
    const odd = "a&b c/é?=#+";
    await createAll([...tagged(odd, [201n, 202n, 203n]), ...tagged("a&b", [204n]), { id: 205n, name: "untagged" }]);
    const first = await client.listPlants({ tag: odd, limit: 2 });
    expect(first.plants.map((p) => p.tag)).toEqual([odd, odd]);
    expect(first.next).toEqual({ limit: 2, after: 202n, tag: odd });
    const rest = await client.listPlants(first.next);
    expect(rest.plants).toEqual([{ id: 203n, name: "p203", tag: odd }]);
    expect(rest.next).toBeUndefined();
  });

  it("lists a plant without a tag without one", async () => {
    await client.createPlant({ id: 300n, name: "bare" });
    const { plants } = await client.listPlants({ after: 299n, limit: 1 });
    expect(plants).toEqual([{ id: 300n, name: "bare" }]);
    expect("tag" in plants[0]!).toBe(false);
  });

  it("defaults to pages of 100", async () => {
    await createAll(tagged("hundreds", range(1_000n, 150)));
    const first = await client.listPlants({ tag: "hundreds" });
    expect(first.plants).toHaveLength(100);
    expect(first.next).toEqual({ limit: 100, after: 1_099n, tag: "hundreds" });
  });
});

describe("listPlants keeps int64 ids exact", () => {
  const edges = [INT64_MIN, INT64_MIN + 1n, -(2n ** 53n) - 1n, 2n ** 53n + 1n, INT64_MAX - 1n, INT64_MAX];

  it("lists ids near ±2^63 and beyond 2^53 as the exact bigints", async () => {
    await createAll(tagged("edge", edges));
    const { plants, next } = await client.listPlants({ tag: "edge" });
    expect(plants.map((p) => p.id)).toEqual(edges);
    expect(next).toBeUndefined();
  });

  it("pages across the edges with cursors near ±2^63", async () => {
    const first = await client.listPlants({ tag: "edge", limit: 1 });
    expect(first.plants.map((p) => p.id)).toEqual([INT64_MIN]);
    expect(first.next?.after).toBe(INT64_MIN);
    const second = await client.listPlants(first.next);
    expect(second.plants.map((p) => p.id)).toEqual([INT64_MIN + 1n]);
    const nearTop = await client.listPlants({ tag: "edge", after: INT64_MAX - 1n });
    expect(nearTop).toEqual({ plants: [{ id: INT64_MAX, name: `p${INT64_MAX}`, tag: "edge" }], next: undefined });
    await expect(client.listPlants({ after: INT64_MAX })).resolves.toEqual({ plants: [], next: undefined });
  });

  it("walks every page of them with the iterator", async () => {
    const seen: bigint[] = [];
    for await (const plant of client.iteratePlants({ tag: "edge", limit: 2 })) seen.push(plant.id);
    expect(seen).toEqual(edges);
  });
});

describe("iteratePlants", () => {
  it("yields every plant across many pages, in id order, with no gap or repeat while others are created", async () => {
    // Every third id exists from the start; new plants land between them and after them meanwhile.
    const existing = range(10_000n, 600, 3n);
    await createAll(tagged("walk", existing));
    const seen: bigint[] = [];
    let writer: Promise<void> | undefined;
    for await (const plant of client.iteratePlants({ tag: "walk", limit: 37 })) {
      seen.push(plant.id);
      // Start writing once the walk is under way, so inserts land both behind and ahead of the cursor.
      writer ??= createAll(tagged("walk", [...range(10_001n, 300, 3n), ...range(20_000n, 100)]), 4);
    }
    await writer;
    expect(new Set(seen).size).toBe(seen.length);
    const seenSet = new Set(seen);
    for (const id of existing) expect(seenSet.has(id)).toBe(true);
    expect([...seen].sort(ascending)).toEqual(seen);
    expect(seen.length).toBeGreaterThanOrEqual(existing.length);
  });

  it("starts after `after` and stops when the caller breaks out", async () => {
    await createAll(tagged("start", range(30_000n, 10)));
    const seen: bigint[] = [];
    for await (const plant of client.iteratePlants({ tag: "start", after: 30_004n, limit: 2 })) {
      seen.push(plant.id);
      if (seen.length === 3) break;
    }
    expect(seen).toEqual([30_005n, 30_006n, 30_007n]);
  });

  it("yields nothing for an empty selection", async () => {
    const seen: NewPlant[] = [];
    for await (const plant of client.iteratePlants({ tag: "none-such" })) seen.push(plant);
    expect(seen).toEqual([]);
  });
});

describe("deletePlant against the real server", () => {
  it("resolves on 204, then rejects with PlantStoreError 404 / 40401", async () => {
    await client.createPlant({ id: 4_242n, name: "Doomed" });
    await expect(client.deletePlant(4_242n)).resolves.toBeUndefined();
    await expect(server.store.get(4_242n)).resolves.toBeUndefined();
    const again = client.deletePlant(4_242);
    await expect(again).rejects.toBeInstanceOf(PlantStoreError);
    await expect(again).rejects.toMatchObject({ status: 404, code: 40401, codeName: "PLANT_NOT_FOUND" });
  });

  it("frees the id: the same id can be created again with another name and tag", async () => {
    await client.createPlant({ id: 4_343n, name: "Before", tag: "old" });
    await client.deletePlant(4_343n);
    await expect(client.createPlant({ id: 4_343n, name: "After", tag: "new" })).resolves.toEqual({
      name: "After",
      tag: "new",
    });
    await expect(client.listPlants({ after: 4_342n, limit: 1 })).resolves.toMatchObject({
      plants: [{ id: 4_343n, name: "After", tag: "new" }],
    });
  });

  it.each([
    ["2^63 - 1", INT64_MAX, INT64_MAX - 1n],
    ["-2^63", INT64_MIN, INT64_MIN + 1n],
    ["2^53 + 1", 2n ** 53n + 1n, 2n ** 53n],
  ])("deletes id %s exactly, not its neighbour", async (_label, id, neighbour) => {
    await using fresh = await startRealServer(plantStoreServer);
    const store = createPlantStoreClient({ baseUrl: fresh.url, token: TOKEN, fetch: checkedFetch });
    await store.createPlant({ id, name: "target" });
    await store.createPlant({ id: neighbour, name: "neighbour" });
    await store.deletePlant(id);
    // Read below the HTTP layer: a rounded id would have deleted (or missed) a neighbour.
    await expect(fresh.store.get(id)).resolves.toBeUndefined();
    await expect(fresh.store.get(neighbour)).resolves.toMatchObject({ id: neighbour, name: "neighbour" });
    await expect(store.listPlants()).resolves.toEqual({
      plants: [{ id: neighbour, name: "neighbour" }],
      next: undefined,
    });
    await expect(store.deletePlant(id)).rejects.toMatchObject({ status: 404, code: 40401 });
  });

  it("rejects a 400 from the server with PlantStoreError 400 / 40005", async () => {
    // The client refuses a malformed id itself; an older or hand-rolled caller reaches the server with one.
    const garbling = createPlantStoreClient({
      baseUrl: server.url,
      token: TOKEN,
      fetch: (input, init) =>
        checkedFetch((input instanceof Request ? input.url : input.toString()).replace(/\/7$/, "/7.5"), init),
    });
    const refused = garbling.deletePlant(7n);
    await expect(refused).rejects.toBeInstanceOf(PlantStoreError);
    await expect(refused).rejects.toMatchObject({ status: 400, code: 40005, codeName: "INVALID_PARAMETER" });
  });

  it("rejects an unknown token with PlantStoreError 401 and deletes nothing", async () => {
    await client.createPlant({ id: 4_444n, name: "Kept" });
    const intruder = createPlantStoreClient({ baseUrl: server.url, token: "not-the-token", fetch: checkedFetch });
    await expect(intruder.deletePlant(4_444n)).rejects.toMatchObject({ status: 401, code: 40101 });
    await expect(intruder.listPlants()).rejects.toMatchObject({ status: 401, code: 40101 });
    await expect(server.store.get(4_444n)).resolves.toMatchObject({ name: "Kept" });
  });
});

describe("listPlants and deletePlant refuse invalid input locally", () => {
  let requests = 0;
  const counting = createPlantStoreClient({
    baseUrl: "http://127.0.0.1:9",
    token: TOKEN,
    fetch: async () => {
      requests += 1;
      return new Response("[]", { status: 200 });
    },
  });

  it.each([
    ["limit 0", { limit: 0 }, /limit must be an integer from 1 to 1000/],
    ["limit 1001", { limit: 1001 }, /limit/],
    ["a fractional limit", { limit: 1.5 }, /limit/],
    ["an unsafe number cursor", { after: 2 ** 53 }, /after .*safe integer/],
    ["a cursor beyond int64", { after: INT64_MAX + 1n }, /after/],
    ["an empty tag", { tag: "" }, /tag must not be empty/],
  ])("listPlants rejects %s with PlantStoreInputError and sends nothing", async (_label, options, message) => {
    const refused = counting.listPlants(options);
    await expect(refused).rejects.toBeInstanceOf(PlantStoreInputError);
    await expect(refused).rejects.toThrow(message);
    expect(requests).toBe(0);
  });

  it.each([
    ["an id above int64", INT64_MAX + 1n],
    ["an id below int64", INT64_MIN - 1n],
    ["an unsafe number id", 2 ** 53],
    ["a fractional id", 1.5],
    ["a string id", "7" as unknown as bigint],
  ])("deletePlant rejects %s with PlantStoreInputError and sends nothing", async (_label, id) => {
    const refused = counting.deletePlant(id);
    await expect(refused).rejects.toBeInstanceOf(PlantStoreInputError);
    await expect(refused).rejects.toThrow(/^invalid id: id /);
    expect(requests).toBe(0);
  });
});

describe("listPlants and deletePlant when the answer is not the interface", () => {
  const answering = (response: () => Response) =>
    createPlantStoreClient({ baseUrl: "http://plants.invalid", token: TOKEN, fetch: async () => response() });
  const json =
    (body: string, headers: Record<string, string> = {}) =>
    () =>
      new Response(body, { status: 200, headers });

  it.each([
    ["a body that is not JSON", json("<html>")],
    ["an object instead of an array", json('{"id":1,"name":"x"}')],
    ["an item without an id", json('[{"name":"x"}]')],
    ["an id in quotes", json('[{"id":"1","name":"x"}]')],
    ["an id beyond int64", json('[{"id":9223372036854775808,"name":"x"}]')],
    ["a Link that is not RFC 8288", json("[]", { link: "/plants?after=1; rel=next" })],
    ["a next link without a cursor", json("[]", { link: '</plants?limit=5>; rel="next"' })],
    ["a next link with a malformed cursor", json("[]", { link: '</plants?after=1.5>; rel="next"' })],
    ["a next link with a repeated cursor", json("[]", { link: '</plants?after=1&after=2>; rel="next"' })],
    ["a 204 instead of 200", () => new Response(null, { status: 204 })],
  ])("listPlants rejects %s with PlantStoreProtocolError", async (_label, response) => {
    await expect(answering(response).listPlants()).rejects.toBeInstanceOf(PlantStoreProtocolError);
  });

  it('finds rel="next" among other links, whatever the case and order of relation types', async () => {
    const page = await answering(
      json('[{"id":3,"name":"x"}]', {
        link: '</plants?after=0>; rel="first", <https://other.example/plants?limit=1&after=3>; REL="last Next"',
      }),
    ).listPlants();
    expect(page).toEqual({ plants: [{ id: 3n, name: "x" }], next: { limit: 1, after: 3n } });
  });

  it('treats a Link without rel="next" as the last page', async () => {
    await expect(answering(json("[]", { link: '</plants?after=0>; rel="first"' })).listPlants()).resolves.toEqual({
      plants: [],
      next: undefined,
    });
  });

  it("iteratePlants stops with PlantStoreProtocolError when the cursor does not move forward", async () => {
    const stuck = answering(json('[{"id":1,"name":"x"}]', { link: '</plants?after=1>; rel="next"' }));
    const seen: bigint[] = [];
    const walk = async () => {
      for await (const plant of stuck.iteratePlants()) seen.push(plant.id);
    };
    await expect(walk()).rejects.toBeInstanceOf(PlantStoreProtocolError);
    expect(seen).toEqual([1n, 1n]);
  });

  it.each([
    ["a 200 instead of 204", () => new Response("{}", { status: 200 })],
    ["a 502 from a proxy", () => new Response("Bad Gateway", { status: 502 })],
  ])("deletePlant rejects %s with PlantStoreProtocolError", async (_label, response) => {
    await expect(answering(response).deletePlant(1n)).rejects.toBeInstanceOf(PlantStoreProtocolError);
  });
});

describe("listPlants and deletePlant send the interface's requests", () => {
  const recording = () => {
    const seen: Request[] = [];
    const store = createPlantStoreClient({
      baseUrl: "https://plants.example/api/",
      token: "abc.DEF-123",
      fetch: async (input, init) => {
        const request = new Request(input, init);
        seen.push(request);
        if (request.method === "DELETE") return new Response(null, { status: 204 });
        // A Link relative to the server's root, as the store sends it: the client keeps its own /api prefix.
        const last = seen.length >= 2;
        return new Response(last ? "[]" : '[{"id":9223372036854775806,"name":"a"}]', {
          status: 200,
          headers: last ? {} : { link: '</plants?limit=1&after=9223372036854775806&tag=a+b>; rel="next"' },
        });
      },
    });
    return { seen, store };
  };

  it("lists with GET <baseUrl>/plants and an exact query, and follows next under the same base URL", async () => {
    const { seen, store } = recording();
    const ids: bigint[] = [];
    for await (const plant of store.iteratePlants({ limit: 1, after: -9223372036854775807n, tag: "a b" }))
      ids.push(plant.id);
    expect(ids).toEqual([9223372036854775806n]);
    expect(seen.map((r) => `${r.method} ${r.url}`)).toEqual([
      "GET https://plants.example/api/plants?limit=1&after=-9223372036854775807&tag=a+b",
      "GET https://plants.example/api/plants?limit=1&after=9223372036854775806&tag=a+b",
    ]);
    expect(seen[0]?.headers.get("authorization")).toBe("Bearer abc.DEF-123");
    expect(seen[0]?.headers.get("accept")).toBe("application/json");
  });

  it("lists with no query at all when given no options", async () => {
    const { seen, store } = recording();
    await store.listPlants();
    expect(seen[0]?.url).toBe("https://plants.example/api/plants");
  });

  it("deletes with DELETE <baseUrl>/plants/<exact id> and no body", async () => {
    const { seen, store } = recording();
    await store.deletePlant(INT64_MIN);
    expect(seen[0]?.method).toBe("DELETE");
    expect(seen[0]?.url).toBe("https://plants.example/api/plants/-9223372036854775808");
    expect(seen[0]?.headers.get("authorization")).toBe("Bearer abc.DEF-123");
    await expect(seen[0]?.text()).resolves.toBe("");
  });

  it("hands back the caller's abort reason", async () => {
    const controller = new AbortController();
    controller.abort(new Error("user gave up"));
    await expect(client.listPlants({}, { signal: controller.signal })).rejects.toThrow("user gave up");
    await expect(client.deletePlant(1n, { signal: controller.signal })).rejects.toThrow("user gave up");
  });
});
