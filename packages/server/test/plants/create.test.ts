import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { startTestServer, type TestServer, TOKEN } from "../support/harness.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

/** Reads the row straight from the database, so "stored exactly" is checked below our own code. */
function storedRow(id: bigint) {
  return server.database.row(id);
}

describe("POST /plants with a valid NewPlant", () => {
  it("answers 200 with exactly name and tag, never id", async () => {
    const response = await server.createRaw('{"id":1,"name":"Fern","tag":"fern"}');
    expect(response.status).toBe(200);
    expect(response.headers["content-type"]).toMatch(/^application\/json/);
    expect(response.text).toBe('{"name":"Fern","tag":"fern"}');
    expect(await storedRow(1n)).toEqual({ id: 1n, name: "Fern", tag: "fern" });
  });

  it("omits tag from the answer when it was not given", async () => {
    const response = await server.createRaw('{"id":2,"name":"Moss"}');
    expect(response.status).toBe(200);
    expect(response.text).toBe('{"name":"Moss"}');
    expect(await storedRow(2n)).toEqual({ id: 2n, name: "Moss", tag: null });
  });

  it("ignores unknown fields: not stored, not echoed", async () => {
    const response = await server.createRaw(
      '{"id":3,"name":"Ivy","colour":"green","__proto__":{"x":1},"constructor":1}',
    );
    expect(response.status).toBe(200);
    expect(response.text).toBe('{"name":"Ivy"}');
    expect(await storedRow(3n)).toEqual({ id: 3n, name: "Ivy", tag: null });
  });

  it.each([
    ["application/json"],
    ["application/json; charset=utf-8"],
    ["application/json;charset=UTF-8"],
    ["Application/JSON"],
  ])("accepts Content-Type %s", async (contentType) => {
    const id = 100 + Math.floor(Math.random() * 1e6);
    const response = await server.createRaw(`{"id":${id},"name":"Sage"}`, { "content-type": contentType });
    expect(response.status).toBe(200);
  });

  it("accepts a body with JSON whitespace and Unicode text, stored exactly", async () => {
    const name = "Monstera 🌿 délicieuse 日本";
    const response = await server.createRaw(`\n { "id" : 4 , "name" : ${JSON.stringify(name)} , "tag": "\\u00e9" } \n`);
    expect(response.status).toBe(200);
    expect(response.json).toEqual({ name, tag: "é" });
    expect(await storedRow(4n)).toEqual({ id: 4n, name, tag: "é" });
  });
});

describe("POST /plants keeps int64 ids exact", () => {
  const ids = [
    ["2^53 + 1", "9007199254740993"],
    ["2^53 + 2", "9007199254740994"],
    ["2^63 - 1", "9223372036854775807"],
    ["2^63 - 2", "9223372036854775806"],
    ["-2^63", "-9223372036854775808"],
    ["-2^63 + 1", "-9223372036854775807"],
    ["zero", "0"],
    ["minus one", "-1"],
  ] as const;

  it.each(ids)("stores id %s exactly", async (_label, literal) => {
    const response = await server.createRaw(`{"id":${literal},"name":"Exact ${literal}"}`);
    expect(response.status).toBe(200);
    expect(await storedRow(BigInt(literal))).toEqual({ id: BigInt(literal), name: `Exact ${literal}`, tag: null });
  });

  it("does not confuse neighbours above 2^53 (they would round to one double)", async () => {
    const a = await server.createRaw('{"id":9007199254740995,"name":"A"}');
    const b = await server.createRaw('{"id":9007199254740996,"name":"B"}');
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect((await storedRow(9007199254740995n))?.name).toBe("A");
    expect((await storedRow(9007199254740996n))?.name).toBe("B");
  });
});

describe("POST /plants sent again", () => {
  it("answers 200 for the same id, name and tag and stores nothing new", async () => {
    const body = '{"id":500,"name":"Aloe","tag":"succulent"}';
    const first = await server.createRaw(body);
    const second = await server.createRaw(body);
    expect(first.status).toBe(200);
    expect(second.status).toBe(200);
    expect(second.text).toBe(first.text);
    expect(await storedRow(500n)).toEqual({ id: 500n, name: "Aloe", tag: "succulent" });
  });

  it.each([
    ["another name", '{"id":501,"name":"Other","tag":"t"}'],
    ["another tag", '{"id":501,"name":"Basil","tag":"u"}'],
    ["no tag", '{"id":501,"name":"Basil"}'],
  ])("answers 409 when the same id comes with %s, keeping the first plant", async (_label, body) => {
    expect((await server.createRaw('{"id":501,"name":"Basil","tag":"t"}')).status).toBe(200);
    const response = await server.createRaw(body);
    expect(response.status).toBe(409);
    expect((response.json as { error: number }).error).toBe(40900);
    expect(await storedRow(501n)).toEqual({ id: 501n, name: "Basil", tag: "t" });
  });

  it("answers 409 when a tag is added to an id stored without one", async () => {
    expect((await server.createRaw('{"id":502,"name":"Mint"}')).status).toBe(200);
    expect((await server.createRaw('{"id":502,"name":"Mint","tag":"herb"}')).status).toBe(409);
  });

  it("treats concurrent identical creations as one plant", async () => {
    const body = '{"id":503,"name":"Thyme"}';
    const answers = await Promise.all(Array.from({ length: 20 }, () => server.createRaw(body)));
    expect(answers.map((a) => a.status)).toEqual(Array(20).fill(200));
  });
});

describe("POST /plants is durable", () => {
  it("keeps an answered plant across a restart on the same database", async () => {
    const response = await server.createRaw('{"id":777,"name":"Durable"}');
    expect(response.status).toBe(200);
    // A second server on the same database sees the committed row (SQLite: WAL, synchronous=FULL;
    // PostgreSQL: synchronous_commit=on).
    const again = await startTestServer({}, { database: server.database });
    try {
      expect(await again.store.get(777n)).toEqual({ id: 777n, name: "Durable" });
    } finally {
      await again.close();
    }
    expect(TOKEN.length).toBeGreaterThan(0);
  });
});
