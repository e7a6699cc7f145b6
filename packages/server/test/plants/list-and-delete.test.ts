import { encodePageCursor as cursor } from "@plantstore/schema";
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest";

import { expectErrorShape, startTestServer, type TestResponse, type TestServer, TOKEN } from "../support/harness.ts";

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

// Paging logic (limit 1, 1000 and the default 100; no Link on an exactly full last page; 10,000
// plants walked while others are created) is tested in process in src/router/plants.test.ts;
// here, what HTTP adds: status, the Link header as sent, exact body text, query strings.
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
    ["-0"],
    ["1.0"],
    ["x"],
    [""],
    ["v1."],
    ["v1.AAAAAAAAAAd"],
    ["v2.AAAAAAAAAAc"],
  ])("refuses after=%j with 400 (40005)", async (after) => {
    expectErrorShape(await list(`?after=${encodeURIComponent(after)}`), 400, 40005);
  });

  it("takes the Link's opaque cursor and the decimal id of the last plant seen alike", async () => {
    // Above 2^53, where a double cannot tell 2^53 + 11 from 2^53 + 12: the cursor still can.
    const ids = [2n ** 53n + 10n, 2n ** 53n + 11n, 2n ** 53n + 12n, 2n ** 53n + 13n];
    for (const id of ids)
      expect((await server.createRaw(`{"id":${id},"name":"p","tag":"both-forms"}`)).status).toBe(200);
    const first = await list("?tag=both-forms&limit=2");
    expect(idsOf(first)).toEqual(ids.slice(0, 2));
    expect(nextQuery(first)).toBe(`?limit=2&after=${cursor(2n ** 53n + 11n)}&tag=both-forms`);
    const byCursor = await list(nextQuery(first));
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

describe("a query that is not percent-encoded UTF-8 (RFC 3986 §2.1)", () => {
  it.each([
    ["tag", "?tag=%ff"],
    ["tag", "?tag=%C3%28"],
    ["tag", "?tag=%ED%A0%80"],
    ["tag", "?tag=%F0%9F%8C"],
    ["tag", "?tag=100%"],
    ["tag", "?tag=%zz"],
    ["after", "?limit=1&after=%80"],
  ])("GET /plants refuses %s in %s with 400 (40005) naming it, rather than reading U+FFFD", async (name, query) => {
    const response = await list(query);
    expectErrorShape(response, 400, 40005);
    expect((response.json as { message: string }).message).toBe(`${name} must be percent-encoded UTF-8`);
  });

  it("is still refused only after the token (401 first)", async () => {
    const response = await server.send({ method: "GET", path: "/plants?tag=%ff" });
    expectErrorShape(response, 401, 40100);
  });

  it("DELETE /plants/{id} refuses one too, the plant stays", async () => {
    expect((await server.createRaw('{"id":7301,"name":"Query"}')).status).toBe(200);
    const response = await server.send({
      method: "DELETE",
      path: "/plants/7301?note=%ff",
      contractPath: "/plants/{id}",
      headers: auth,
    });
    expectErrorShape(response, 400, 40005);
    expect((response.json as { message: string }).message).toBe("note must be percent-encoded UTF-8");
    expect(await server.store.get(7301n)).toEqual({ id: 7301n, name: "Query" });
  });

  it("reads valid escapes of any character, and + as a space, exactly", async () => {
    expect((await server.createRaw('{"id":7302,"name":"Escaped","tag":"été 🌱"}')).status).toBe(200);
    const response = await list("?tag=%C3%A9t%C3%A9+%F0%9F%8C%B1");
    expect(response.status).toBe(200);
    expect(response.text).toBe('[{"id":7302,"name":"Escaped","tag":"été 🌱"}]');
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

  it.each([["abc"], ["1.5"], ["9223372036854775808"], ["-9223372036854775809"], ["%201"], ["+5"], ["0x10"], ["-0"]])(
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
