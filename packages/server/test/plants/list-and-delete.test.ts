import { Agent, request } from "node:http";
import { encodePageCursor as cursor } from "@plantstore/schema";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { checkAnswer } from "@plantstore/test-support/response-contract";
import {
  contractsAt,
  expectErrorShape,
  startTestServer,
  TOKEN,
  type TestResponse,
  type TestServer,
} from "../support/harness.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

const auth = { authorization: `Bearer ${TOKEN}` };
const list = (query = "") => server.send({ method: "GET", path: `/plants${query}`, headers: auth });
const remove = (id: string) =>
  server.send({ method: "DELETE", path: `/plants/${id}`, contractPath: "/plants/{id}", headers: auth });

/** Ids as the exact integer literals of the JSON text (JSON.parse would round those above 2^53). */
function idsOf(response: TestResponse): bigint[] {
  return [...response.text.matchAll(/"id":(-?\d+)/g)].map((m) => BigInt(m[1]!));
}

function nextQuery(response: TestResponse): string | undefined {
  const link = response.headers["link"] as string | undefined;
  if (link === undefined) return undefined;
  const match = /^<\/plants(\?[^>]*)>; rel="next"$/.exec(link);
  if (match?.[1] === undefined) throw new Error(`unexpected Link: ${link}`);
  return match[1];
}

/** Keep-alive HTTP with bounded concurrency, for creating thousands of plants quickly. */
async function createMany(ids: bigint[], tag?: string, concurrency = 32): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: concurrency });
  const url = new URL(server.url);
  let next = 0;
  const worker = async () => {
    while (next < ids.length) {
      const id = ids[next++]!;
      const body = `{"id":${id},"name":"p${id}"${tag === undefined ? "" : `,"tag":"${tag}"`}}`;
      const status = await new Promise<number>((resolve, reject) => {
        const req = request(
          {
            host: url.hostname,
            port: url.port,
            path: "/plants",
            method: "POST",
            agent,
            headers: { ...auth, "content-type": "application/json" },
          },
          (res) => {
            let text = "";
            res.setEncoding("utf8").on("data", (chunk: string) => (text += chunk));
            res.on("end", () => {
              const status = res.statusCode ?? 0;
              const contentType = res.headers["content-type"] ?? null;
              try {
                checkAnswer(contractsAt(server.url), {
                  method: "POST",
                  path: "/plants",
                  status,
                  contentType,
                  body: text,
                });
                resolve(status);
              } catch (error) {
                reject(error);
              }
            });
          },
        );
        req.on("error", reject);
        req.end(body);
      });
      if (status !== 200) throw new Error(`create ${id} answered ${status}`);
    }
  };
  await Promise.all(Array.from({ length: concurrency }, worker));
  agent.destroy();
}

describe("GET /plants", () => {
  it("answers an empty array for an empty store, with no Link", async () => {
    await using empty = await startTestServer();
    const response = await empty.send({ method: "GET", path: "/plants", headers: auth });
    expect(response.status).toBe(200);
    expect(response.text).toBe("[]");
    expect(response.headers["link"]).toBeUndefined();
  });

  it("lists ids exactly across the int64 range, ordered by id, with tag only when set", async () => {
    const extremes = [
      "-9223372036854775808",
      "-9223372036854775807",
      "9007199254740993",
      "9223372036854775806",
      "9223372036854775807",
    ];
    for (const id of extremes)
      expect((await server.createRaw(`{"id":${id},"name":"edge ${id}","tag":"edge"}`)).status).toBe(200);
    expect((await server.createRaw('{"id":0,"name":"untagged"}')).status).toBe(200);
    const response = await list("?tag=edge");
    expect(response.status).toBe(200);
    expect(idsOf(response)).toEqual(extremes.map(BigInt));
    expect(response.text).toContain('{"id":-9223372036854775808,"name":"edge -9223372036854775808","tag":"edge"}');
    const untagged = await list("?after=-1&limit=1");
    expect(untagged.text).toBe('[{"id":0,"name":"untagged"}]');
  });

  it.each([["0"], ["-1"], ["1001"], ["abc"], ["1.5"], [""], ["1e2"], ["99999999999999999999"]])(
    "refuses limit=%j with 400 (40005)",
    async (limit) => {
      const response = await list(`?limit=${encodeURIComponent(limit)}`);
      expectErrorShape(response, 400, 40005);
      expect((response.json as { message: string }).message).toMatch(/^limit /);
    },
  );

  it("refuses a repeated limit", async () => {
    expectErrorShape(await list("?limit=1&limit=2"), 400, 40005);
  });

  it.each([
    ["9223372036854775808"],
    ["-9223372036854775809"],
    ["+1"],
    ["01"],
    ["1.0"],
    ["x"],
    [""],
    ["v1."],
    ["v1.AAAAAAAAAAd"],
    ["v2.AAAAAAAAAAc"],
  ])("refuses after=%j with 400 (40005)", async (after) => {
    expectErrorShape(await list(`?after=${encodeURIComponent(after)}`), 400, 40005);
  });

  it("accepts limit 1 and 1000, and defaults to 100", async () => {
    await createMany(
      Array.from({ length: 150 }, (_, i) => BigInt(1_000_000 + i)),
      "bulk",
    );
    expect(idsOf(await list("?tag=bulk&limit=1"))).toHaveLength(1);
    expect(idsOf(await list("?tag=bulk&limit=1000"))).toHaveLength(150);
    const firstPage = await list("?tag=bulk");
    expect(idsOf(firstPage)).toHaveLength(100);
    expect(nextQuery(firstPage)).toBe(`?limit=100&after=${cursor(1_000_099n)}&tag=bulk`);
  });

  it("has no Link when the last page is exactly full, and one when a single plant more follows", async () => {
    await createMany(
      Array.from({ length: 10 }, (_, i) => BigInt(500_000 + i)),
      "exact",
    );
    const full = await list("?tag=exact&limit=10");
    expect(idsOf(full)).toHaveLength(10);
    expect(full.headers["link"]).toBeUndefined();
    const short = await list("?tag=exact&limit=9");
    expect(idsOf(short)).toHaveLength(9);
    expect(nextQuery(short)).toBe(`?limit=9&after=${cursor(500_008n)}&tag=exact`);
    const rest = await list(nextQuery(short)!);
    expect(idsOf(rest)).toEqual([500_009n]);
    expect(rest.headers["link"]).toBeUndefined();
    const halves = await list("?tag=exact&limit=5");
    const second = await list(nextQuery(halves)!);
    expect(idsOf(second)).toEqual([500_005n, 500_006n, 500_007n, 500_008n, 500_009n]);
    expect(second.headers["link"]).toBeUndefined();
  });

  it("answers at most 1000 with limit=1000, and a Link when more follow", async () => {
    await createMany(
      Array.from({ length: 1001 }, (_, i) => BigInt(600_000 + i)),
      "kilo",
    );
    const first = await list("?tag=kilo&limit=1000");
    expect(idsOf(first)).toHaveLength(1000);
    expect(nextQuery(first)).toBe(`?limit=1000&after=${cursor(600_999n)}&tag=kilo`);
    const rest = await list(nextQuery(first)!);
    expect(idsOf(rest)).toEqual([601_000n]);
    expect(rest.headers["link"]).toBeUndefined();
  });

  it("takes the Link's opaque cursor and the decimal id of the last plant seen alike", async () => {
    // Above 2^53, where a double cannot tell 2^53 + 11 from 2^53 + 12: the cursor still can.
    const ids = [2n ** 53n + 10n, 2n ** 53n + 11n, 2n ** 53n + 12n, 2n ** 53n + 13n];
    for (const id of ids)
      expect((await server.createRaw(`{"id":${id},"name":"p","tag":"both-forms"}`)).status).toBe(200);
    const first = await list("?tag=both-forms&limit=2");
    expect(idsOf(first)).toEqual(ids.slice(0, 2));
    expect(nextQuery(first)).toBe(`?limit=2&after=${cursor(2n ** 53n + 11n)}&tag=both-forms`);
    const byCursor = await list(nextQuery(first)!);
    const byId = await list(`?limit=2&after=${2n ** 53n + 11n}&tag=both-forms`);
    expect(idsOf(byCursor)).toEqual(ids.slice(2));
    expect(byId.text).toBe(byCursor.text);
  });

  it("takes cursors at the int64 bounds", async () => {
    const top = await list("?after=9223372036854775807");
    expect(top.status).toBe(200);
    expect(top.text).toBe("[]");
    expect(top.headers["link"]).toBeUndefined();
    const bottom = await list("?after=-9223372036854775808&limit=1");
    expect(idsOf(bottom)[0]! > -9223372036854775808n).toBe(true);
    expect(nextQuery(bottom)).toMatch(/^\?limit=1&after=v1\.[\w-]{11}$/);
  });

  it("keeps a tag with reserved characters intact in the Link", async () => {
    const tag = "a&b c/é?=#+";
    for (const id of [700_001, 700_002]) {
      expect((await server.createRaw(JSON.stringify({ id, name: `p${id}`, tag }))).status).toBe(200);
    }
    const first = await list(`?tag=${encodeURIComponent(tag)}&limit=1`);
    expect(idsOf(first)).toEqual([700_001n]);
    const link = nextQuery(first)!;
    expect(new URLSearchParams(link).get("tag")).toBe(tag);
    const second = await list(link);
    expect(idsOf(second)).toEqual([700_002n]);
    expect(second.headers["link"]).toBeUndefined();
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
    let query: string | undefined = "?tag=walk&limit=250";
    let pages = 0;
    while (query !== undefined) {
      const page = await list(query);
      expect(page.status).toBe(200);
      seen.push(...idsOf(page));
      query = nextQuery(page);
      pages++;
    }
    await writer;
    const seenSet = new Set(seen);
    expect(seenSet.size).toBe(seen.length); // no repeats
    for (const id of ids) expect(seenSet.has(id)).toBe(true); // no gaps among those there all along
    expect([...seen].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))).toEqual(seen); // ordered by id
    expect(pages).toBeGreaterThanOrEqual(40);
  }, 120_000);
});

describe("GET /plants whose page holds one id at an int64 bound or around ±2^53", () => {
  // A store of its own, holding only the case's plants: a page with a second id beyond ±2^53
  // once hid a 500 for INT64_MIN, which node:sqlite reads as a rounded number without raising.
  let alone: TestServer;
  beforeAll(async () => {
    alone = await startTestServer();
  });
  afterAll(async () => {
    await alone.close();
  });
  const get = (method: "GET" | "HEAD", query: string) => alone.send({ method, path: `/plants${query}`, headers: auth });

  it.each([
    ["-9223372036854775808"],
    ["-9223372036854775807"],
    ["9223372036854775807"],
    ["9007199254740993"],
    ["9007199254740991"],
    ["-9007199254740991"],
    ["-9007199254740993"],
  ])("lists %s exactly, filtered and unfiltered, answers HEAD, and pages past it", async (id) => {
    // Whatever the outcome, the next case starts from an empty store again.
    onTestFinished(async () => {
      for (const gone of [id, "0"])
        await alone.send({ method: "DELETE", path: `/plants/${gone}`, contractPath: "/plants/{id}", headers: auth });
      expect(await alone.database.count()).toBe(0);
    });
    const tag = `edge ${id}`;
    const plant = `{"id":${id},"name":"edge","tag":${JSON.stringify(tag)}}`;
    expect((await alone.createRaw(plant)).status).toBe(200);
    const filtered = await get("GET", `?tag=${encodeURIComponent(tag)}`);
    expect([filtered.status, filtered.text]).toEqual([200, `[${plant}]`]);
    const unfiltered = await get("GET", "?limit=2");
    expect([unfiltered.status, unfiltered.text]).toEqual([200, `[${plant}]`]);
    expect((await get("HEAD", "?limit=1")).status).toBe(200);
    expect((await get("HEAD", `?tag=${encodeURIComponent(tag)}`)).status).toBe(200);

    // With a small id beside it, the page of one ends on whichever comes first, and its Link leads on.
    const zero = '{"id":0,"name":"zero"}';
    expect((await alone.createRaw(zero)).status).toBe(200);
    const [first, second] = BigInt(id) < 0n ? [plant, zero] : [zero, plant];
    const onePage = await get("GET", "?limit=1");
    expect([onePage.status, onePage.text]).toEqual([200, `[${first}]`]);
    const rest = await get("GET", nextQuery(onePage)!);
    expect([rest.status, rest.text]).toEqual([200, `[${second}]`]);
    expect(rest.headers["link"]).toBeUndefined();
  });
});

describe("query and path parameters speak the catalogue's voice", () => {
  /** zod's own wording (issue 23: `limit=99999999999999999999999` answered "Too big: expected int to be <=9007199254740991"). */
  const ZOD_WORDING = /expected|too big|too small|invalid input/i;
  const huge = ["99999999999999999999999", "-99999999999999999999999", "9223372036854775808", "1".repeat(400)];
  const odd = ["1e400", "Infinity", "NaN", "0x10", "", " ", "\u0000", "v1.AAAAAAAAAAd", "v1.", "９"];

  it.each([
    ...[...huge, ...odd, "-0", "0"].map((value) => ["limit", `?limit=${encodeURIComponent(value)}`]),
    ...[...huge, ...odd].map((value) => ["after", `?after=${encodeURIComponent(value)}`]),
    ["tag", "?tag="],
    ["tag", `?tag=${"t".repeat(65)}`],
    ["tag", "?tag=%00"],
    ...["limit", "after", "tag"].map((name) => [name, `?${name}=1&${name}=2`]),
  ])("GET /plants: the message about %s for %s is ours", async (name, query) => {
    const response = await list(query);
    expectErrorShape(response, 400, 40005);
    const message = (response.json as { message: string }).message;
    expect(message.startsWith(`${name} `), message).toBe(true);
    expect(message).not.toMatch(ZOD_WORDING);
  });

  it.each([...huge, ...odd.filter((value) => value.trim() !== "")].map((value) => [encodeURIComponent(value)]))(
    "DELETE /plants/%s: the message about the id is ours",
    async (id) => {
      const response = await remove(id);
      expectErrorShape(response, 400, 40005);
      const message = (response.json as { message: string }).message;
      expect(message.startsWith("id "), message).toBe(true);
      expect(message).not.toMatch(ZOD_WORDING);
    },
  );

  it("says limit's range for a limit beyond 2^53, in one sentence", async () => {
    const response = await list("?limit=99999999999999999999999");
    expect(response.json).toEqual({ error: 40005, message: "limit must be an integer from 1 to 1000" });
  });

  it("refuses a repeated tag as limit and after are refused: not a single value", async () => {
    for (const name of ["limit", "after", "tag"]) {
      const response = await list(`?${name}=1&${name}=2`);
      expect(response.json).toEqual({ error: 40005, message: `${name} must be a single value` });
    }
  });

  it("refuses an `after` that does not match the document's cursor pattern, in our words", async () => {
    const response = await list("?after=v1.AAAAAAAAAAd");
    expect(response.json).toEqual({
      error: 40005,
      message: "after must be the cursor of a Link header's next link, or a decimal id (int64)",
    });
  });
});

describe("DELETE /plants/{id}", () => {
  it("answers 204 with no body, then 404 (40401), and frees the id", async () => {
    expect((await server.createRaw('{"id":4242,"name":"Doomed"}')).status).toBe(200);
    const deleted = await remove("4242");
    expect(deleted.status).toBe(204);
    expect(deleted.text).toBe("");
    expectErrorShape(await remove("4242"), 404, 40401);
    const recreated = await server.createRaw('{"id":4242,"name":"Reborn","tag":"new"}');
    expect(recreated.status).toBe(200);
    expect(recreated.text).toBe('{"name":"Reborn","tag":"new"}');
  });

  it.each([["9223372036854775807"], ["-9223372036854775808"]])("deletes id %s exactly, not a neighbour", async (id) => {
    const neighbour = (BigInt(id) > 0n ? BigInt(id) - 1n : BigInt(id) + 1n).toString();
    await server.createRaw(`{"id":${id},"name":"x"}`);
    await server.createRaw(`{"id":${neighbour},"name":"y"}`);
    expect((await remove(id)).status).toBe(204);
    expect(await server.store.get(BigInt(id))).toBeUndefined();
    expect((await server.store.get(BigInt(neighbour)))?.name).toBeDefined();
  });

  it.each([["abc"], ["1.5"], ["9223372036854775808"], ["-9223372036854775809"], ["%201"], ["+5"], ["0x10"]])(
    "refuses id %j with 400 (40005)",
    async (id) => {
      expectErrorShape(await remove(id), 400, 40005);
    },
  );

  it("needs a token before anything else", async () => {
    const response = await server.send({ method: "DELETE", path: "/plants/abc", contractPath: "/plants/{id}" });
    expectErrorShape(response, 401, 40100);
  });
});
