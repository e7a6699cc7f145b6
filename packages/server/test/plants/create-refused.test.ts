import { gzipSync } from "node:zlib";

import { MAX_JSON_DEPTH } from "@plantstore/schema";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { expectErrorShape, startTestServer, type TestServer, TOKEN } from "../support/harness.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ bodyLimitBytes: 1024 });
});
afterAll(async () => {
  await server.close();
});

function plantCount(): Promise<number> {
  return server.database.count();
}

const long = (n: number) => "x".repeat(n);

describe("POST /plants refuses a NewPlant that breaks the schema (400, 40004)", () => {
  const cases: Array<[string, string, RegExp]> = [
    ["id above int64", '{"id":9223372036854775808,"name":"a"}', /^id must be at most 9223372036854775807/],
    ["id below int64", '{"id":-9223372036854775809,"name":"a"}', /^id must be at least -9223372036854775808/],
    ["id far beyond int64", `{"id":1${"0".repeat(40)},"name":"a"}`, /^id must be at most/],
    ["id with a fraction", '{"id":7.5,"name":"a"}', /^id must be a JSON integer/],
    ["id written 7.0", '{"id":7.0,"name":"a"}', /^id must be a JSON integer/],
    ["id with an exponent", '{"id":1e3,"name":"a"}', /^id must be a JSON integer/],
    ["id as a string", '{"id":"7","name":"a"}', /^id must be a JSON integer/],
    ["id as true", '{"id":true,"name":"a"}', /^id must be a JSON integer/],
    ["id as null", '{"id":null,"name":"a"}', /^id must be a JSON integer/],
    ["id as an object", '{"id":{"$numberLong":"7"},"name":"a"}', /^id must be a JSON integer/],
    ["no id", '{"name":"a"}', /^id is required/],
    ["name as a number", '{"id":7,"name":7}', /^name must be a string/],
    ["name as null", '{"id":7,"name":null}', /^name must be a string/],
    ["name as an array", '{"id":7,"name":["a"]}', /^name must be a string/],
    ["no name", '{"id":7}', /^name is required/],
    ["empty name", '{"id":7,"name":""}', /^name must not be empty/],
    ["name too long", `{"id":7,"name":"${long(257)}"}`, /^name must be at most 256 characters/],
    ["name with a lone surrogate", '{"id":7,"name":"a\\ud800b"}', /^name must be well-formed Unicode/],
    ["name with U+0000", '{"id":7,"name":"a\\u0000b"}', /^name must be well-formed Unicode/],
    ["tag as a number", '{"id":7,"name":"a","tag":1}', /^tag must be a string/],
    ["tag as null", '{"id":7,"name":"a","tag":null}', /^tag must be a string/],
    ["tag as false", '{"id":7,"name":"a","tag":false}', /^tag must be a string/],
    ["empty tag", '{"id":7,"name":"a","tag":""}', /^tag must not be empty/],
    ["tag too long", `{"id":7,"name":"a","tag":"${long(65)}"}`, /^tag must be at most 64 characters/],
  ];

  it.each(cases)("refuses %s", async (_label, body, message) => {
    const before = await plantCount();
    const response = await server.createRaw(body);
    expectErrorShape(response, 400, 40004);
    expect((response.json as { message: string }).message).toMatch(message);
    expect(await plantCount()).toBe(before);
  });

  it("names every broken field at once", async () => {
    const response = await server.createRaw('{"id":"x","name":1}');
    expectErrorShape(response, 400, 40004);
    const message = (response.json as { message: string }).message;
    expect(message).toContain("id must be");
    expect(message).toContain("name must be");
  });

  it("accepts names at the length limit", async () => {
    const response = await server.createRaw(`{"id":8,"name":"${long(256)}","tag":"${long(64)}"}`.replace("8", "8"));
    // 256 + 64 characters and the JSON around them fit the 1 KiB limit used in this file.
    expect(response.status).toBe(200);
  });
});

describe("POST /plants refuses bodies that are not one JSON object", () => {
  it.each([
    ["an array", "[1,2]", 40002],
    ["a string", '"plant"', 40002],
    ["a number", "7", 40002],
    ["null", "null", 40002],
    ["true", "true", 40002],
    ["malformed JSON", '{"id":7,"name":"a"', 40001],
    ["JSON with a trailing comma", '{"id":7,"name":"a",}', 40001],
    ["two JSON values", '{"id":7,"name":"a"} {}', 40001],
    ["single quotes", "{'id':7,'name':'a'}", 40001],
    ["NaN", '{"id":NaN,"name":"a"}', 40001],
  ])("refuses %s with 400", async (_label, body, code) => {
    const before = await plantCount();
    expectErrorShape(await server.createRaw(body), 400, code);
    expect(await plantCount()).toBe(before);
  });

  it("refuses an empty body with 400 (40003)", async () => {
    expectErrorShape(await server.createRaw(""), 400, 40003);
  });

  it("refuses bytes that are not UTF-8 with 400 (40001)", async () => {
    const response = await server.send({
      method: "POST",
      path: "/plants",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: Buffer.from([
        0x7b, 0x22, 0x69, 0x64, 0x22, 0x3a, 0x37, 0x2c, 0x22, 0x6e, 0x22, 0x3a, 0x22, 0xff, 0x22, 0x7d,
      ]),
    });
    expectErrorShape(response, 400, 40001);
  });

  it("refuses a body over the limit with 413 (41300), declared or chunked", async () => {
    const big = `{"id":9,"name":"${long(2000)}"}`;
    expectErrorShape(await server.createRaw(big), 413, 41300);
    const chunked = await server.send({
      method: "POST",
      path: "/plants",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", "transfer-encoding": "chunked" },
      body: big,
    });
    expectErrorShape(chunked, 413, 41300);
  });
});

describe("POST /plants with a body nested deeper than MAX_JSON_DEPTH", () => {
  let roomy: TestServer;
  beforeAll(async () => {
    // 10,000 levels take 20 KB, past the default 16 KiB limit: only depth may refuse these bodies.
    roomy = await startTestServer({ bodyLimitBytes: 64 * 1024 });
  });
  afterAll(async () => {
    await roomy.close();
  });
  /** A JSON object `depth` levels deep at its innermost number, the object itself being one. */
  const nestedObject = (depth: number, fields: string, inner: string) =>
    `{${fields}"x":${"[".repeat(depth - 1)}${inner}${"]".repeat(depth - 1)}}`;

  // The 16-digit number sent the lossless parse down its reviver path, whose recursion overflowed
  // the stack; the answer was "the body is not valid JSON" (issue 23).
  it.each([
    ["a 16-digit number 10,000 levels deep", nestedObject(10_000, '"id":1,"name":"deep",', "9007199254740993")],
    [
      "a 16-digit number one level too deep",
      nestedObject(MAX_JSON_DEPTH + 1, '"id":1,"name":"deep",', "9007199254740993"),
    ],
    ["short numbers 10,000 levels deep", nestedObject(10_000, '"id":1,"name":"deep",', "7")],
  ])("refuses %s with 400 (40004) saying how deep it may be", async (_label, body) => {
    const before = await roomy.database.count();
    const response = await roomy.createRaw(body);
    expectErrorShape(response, 400, 40004);
    expect((response.json as { message: string }).message).toBe(
      `the body is nested deeper than ${MAX_JSON_DEPTH} levels`,
    );
    expect(await roomy.database.count()).toBe(before);
  });

  it("parses a 16-digit number exactly MAX_JSON_DEPTH deep, then validates it as a NewPlant", async () => {
    const response = await roomy.createRaw(nestedObject(MAX_JSON_DEPTH, "", "9007199254740993"));
    expectErrorShape(response, 400, 40004);
    const message = (response.json as { message: string }).message;
    expect(message).toMatch(/^id is required/);
    expect(message).not.toMatch(/nested|not valid JSON/);
  });
});

describe("POST /plants with a member name twice in one object (400, 40004)", () => {
  it.each([
    ['{"id":6998,"id":6997,"name":"Twice"}', "id"],
    ['{"id":6996,"name":"Twice","tag":"a","tag":"b"}', "tag"],
    ['{"id":6995,"name":"Twice","extra":{"k":1,"k":2}}', "k"],
    ['{"id":6994,"name":"Twice","\\u0069d":6993}', "id"],
  ])("refuses %s, naming %j, and stores nothing", async (body, name) => {
    const before = await server.database.count();
    const response = await server.createRaw(body);
    expectErrorShape(response, 400, 40004);
    expect((response.json as { message: string }).message).toBe(`the body has the member "${name}" more than once`);
    expect(await server.database.count()).toBe(before);
  });
});

describe("POST /plants refuses a body with a Content-Encoding (415, 41501)", () => {
  it.each([["gzip"], ["deflate"], ["br"], ["identity, gzip"], ["x-custom"]])(
    "refuses %s, naming identity in Accept-Encoding",
    async (coding) => {
      const response = await server.createRaw('{"id":11,"name":"a"}', {
        "content-type": "application/json",
        "content-encoding": coding,
      });
      expectErrorShape(response, 415, 41501);
      expect(response.headers["accept-encoding"]).toBe("identity");
      expect(response.json).toMatchObject({ message: expect.stringContaining("identity") });
    },
  );

  it("refuses a gzip body rather than reading its bytes as JSON", async () => {
    const body = gzipSync('{"id":12,"name":"zipped"}');
    const response = await server.send({
      method: "POST",
      path: "/plants",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", "content-encoding": "gzip" },
      body,
    });
    expectErrorShape(response, 415, 41501);
  });

  it.each([["identity"], ["IDENTITY"], [""]])(
    "reads the body sent with Content-Encoding %j as it is",
    async (coding) => {
      const response = await server.createRaw('{"id":13,"name":"plain"}', {
        "content-type": "application/json",
        "content-encoding": coding,
      });
      expect(response.status).toBe(200);
    },
  );
});

describe("POST /plants refuses other content types (415, 41500)", () => {
  it.each([
    ["text/plain"],
    ["application/x-www-form-urlencoded"],
    ["multipart/form-data; boundary=x"],
    ["application/json; charset=latin1"],
    ["application/jsonx"],
    ["application/problem+json"],
    ["json"],
    [";;;"],
  ])("refuses %s", async (contentType) => {
    expectErrorShape(await server.createRaw('{"id":10,"name":"a"}', { "content-type": contentType }), 415, 41500);
  });

  it("refuses a request without Content-Type", async () => {
    const response = await server.send({
      method: "POST",
      path: "/plants",
      headers: { authorization: `Bearer ${TOKEN}` },
      body: '{"id":10,"name":"a"}',
    });
    expectErrorShape(response, 415, 41500);
  });
});
