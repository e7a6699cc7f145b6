import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { expectedETag } from "../support/expected-etag.ts";
import { expectErrorShape, startTestServer, type TestServer, TOKEN } from "../support/harness.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

const auth = { authorization: `Bearer ${TOKEN}` };
const read = (id: string | bigint | number, headers: Record<string, string> = {}, method = "GET") =>
  server.send({ method, path: `/plants/${id}`, contractPath: "/plants/{id}", headers: { ...auth, ...headers } });

const BIG = 2n ** 63n - 2n;

describe("GET /plants/{id}", () => {
  beforeAll(async () => {
    expect((await server.createRaw(`{"id":${BIG},"name":"Ficus","tag":"indoor"}`)).status).toBe(200);
    expect((await server.createRaw('{"id":-7,"name":"Untagged"}')).status).toBe(200);
  });

  it("answers the plant as a list item shows it, with its exact int64 id and a strong ETag", async () => {
    const response = await read(BIG);
    expect(response.status).toBe(200);
    expect(response.text).toBe(`{"id":${BIG},"name":"Ficus","tag":"indoor"}`);
    const listed = await server.send({ method: "GET", path: `/plants?after=${BIG - 1n}&limit=1`, headers: auth });
    expect(listed.text).toBe(`[${response.text}]`);
    // The same tag whichever instance on this database answers: a digest of the content keyed by the database's secret.
    expect(response.headers["etag"]).toBe(
      await expectedETag(server.database, { id: BIG, name: "Ficus", tag: "indoor" }),
    );
    expect(response.headers["etag"]).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
  });

  it("leaves out a tag the plant has not", async () => {
    const response = await read(-7);
    expect(response.text).toBe('{"id":-7,"name":"Untagged"}');
    expect(response.headers["etag"]).toBe(await expectedETag(server.database, { id: -7n, name: "Untagged" }));
  });

  it("answers 404 (40401) for an id no plant has, whatever the preconditions", async () => {
    expectErrorShape(await read(123456), 404, 40401);
    expectErrorShape(await read(123456, { "if-none-match": "*" }), 404, 40401);
    expectErrorShape(await read(123456, { "if-match": '"stale"' }), 404, 40401);
  });

  it.each([["abc"], ["1.5"], ["9223372036854775808"], ["-0"], ["+1"], ["01"]])(
    "refuses the id %j with 400 (40005)",
    async (id) => {
      expectErrorShape(await read(id), 400, 40005);
    },
  );

  it("answers HEAD with the same status and headers and no body", async () => {
    const get = await read(BIG);
    const head = await read(BIG, {}, "HEAD");
    expect(head.status).toBe(200);
    expect(head.text).toBe("");
    expect(head.headers["etag"]).toBe(get.headers["etag"]);
    expect(head.headers["content-type"]).toBe(get.headers["content-type"]);
    expect((await read(123456, {}, "HEAD")).status).toBe(404);
  });

  it("answers 304 with the ETag and no body when If-None-Match names the current tag, weakly or in a list, or is *", async () => {
    const etag = (await read(BIG)).headers["etag"] as string;
    for (const ifNoneMatch of [etag, `W/${etag}`, `"other", ${etag}`, `"a",,  ${etag} ,`, "*"]) {
      const response = await read(BIG, { "if-none-match": ifNoneMatch });
      expect(response.status, ifNoneMatch).toBe(304);
      expect(response.text).toBe("");
      expect(response.headers["etag"]).toBe(etag);
      expect(response.headers["content-type"]).toBeUndefined();
    }
    const head = await read(BIG, { "if-none-match": etag }, "HEAD");
    expect(head.status).toBe(304);
  });

  it("answers 200 when If-None-Match names only other tags", async () => {
    const response = await read(BIG, { "if-none-match": '"other", W/"older"' });
    expect(response.status).toBe(200);
    expect(response.text).toContain('"name":"Ficus"');
  });

  it("answers 412 (41200) with the current ETag when If-Match names none of it, and 200 when it does", async () => {
    const etag = (await read(BIG)).headers["etag"] as string;
    const stale = await read(BIG, { "if-match": '"stale"' });
    expectErrorShape(stale, 412, 41200);
    expect(stale.headers["etag"]).toBe(etag);
    // If-Match compares strongly: a weak tag never matches.
    expectErrorShape(await read(BIG, { "if-match": `W/${etag}` }), 412, 41200);
    expect((await read(BIG, { "if-match": etag })).status).toBe(200);
    expect((await read(BIG, { "if-match": "*" })).status).toBe(200);
  });

  it.each([['"unterminated'], ["unquoted"], ['"a" "b"'], [","], ['"a"; W/"b"'], ['w/"lowercase-weak"']])(
    "refuses the malformed If-None-Match %j with 400 (40000) naming the header",
    async (value) => {
      const response = await read(BIG, { "if-none-match": value });
      expectErrorShape(response, 400, 40000);
      expect((response.json as { message: string }).message).toContain("If-None-Match");
    },
  );

  it("refuses a malformed If-Match with 400 (40000) naming the header", async () => {
    const response = await read(BIG, { "if-match": "abc" });
    expectErrorShape(response, 400, 40000);
    expect((response.json as { message: string }).message).toContain("If-Match");
  });

  it("needs a token: 401 without one", async () => {
    expectErrorShape(
      await server.send({ method: "GET", path: `/plants/${BIG}`, contractPath: "/plants/{id}" }),
      401,
      40100,
    );
  });
});
