import { describe, expect, it } from "vitest";

import { expectedETag, unkeyedETag } from "../support/expected-etag.ts";
import { startTestServer, type TestServer, TOKEN } from "../support/harness.ts";
import { createTestDatabase } from "../support/test-database.ts";

/**
 * A plant's ETag is opaque: a digest of its content keyed by a secret its database keeps, so it tells
 * whoever sees it (a write-only token's 412, a proxy's log, a cache) nothing that guessed content
 * could be checked against offline, while every instance on the database still answers the same
 * tag for the same content. Runs on both backends.
 */

const auth = { authorization: `Bearer ${TOKEN}` };
const at = (id: bigint) => ({ path: `/plants/${id}`, contractPath: "/plants/{id}" });
const etagOf = async (server: TestServer, id: bigint) =>
  (await server.send({ method: "GET", ...at(id), headers: auth })).headers["etag"] as string;

const PLANT = { id: 41n, name: "Monstera", tag: "indoor" };
const create = async (server: TestServer, plant: { id: bigint; name: string; tag?: string } = PLANT) =>
  expect((await server.createRaw(JSON.stringify({ ...plant, id: Number(plant.id) }))).status).toBe(200);

describe("a plant's ETag", () => {
  it("is a SHA-256 of its database's secret and its JSON, not a plain SHA-256 anyone could compute", async () => {
    await using server = await startTestServer();
    await create(server);
    const etag = await etagOf(server, PLANT.id);
    expect(etag).toMatch(/^"[A-Za-z0-9_-]{27}"$/);
    expect(etag).not.toBe(unkeyedETag(PLANT));
    expect(etag).toBe(await expectedETag(server.database, PLANT));
    // The 412 a writer gets carries the same opaque tag.
    const taken = await server.send({
      method: "PUT",
      ...at(PLANT.id),
      headers: { ...auth, "content-type": "application/json", "if-none-match": "*" },
      body: '{"name":"Guess"}',
    });
    expect(taken.status).toBe(412);
    expect(taken.headers["etag"]).toBe(etag);
  });

  it("is the same from two servers on one database: a tag one answered is the other's If-Match", async () => {
    await using first = await startTestServer();
    await using second = await startTestServer({}, { database: first.database });
    await create(first);
    const etag = await etagOf(first, PLANT.id);
    expect(await etagOf(second, PLANT.id)).toBe(etag);
    const patched = await second.send({
      method: "PATCH",
      ...at(PLANT.id),
      headers: { ...auth, "content-type": "application/merge-patch+json", "if-match": etag },
      body: '{"tag":"shade"}',
    });
    expect(patched.status).toBe(200);
    expect(patched.headers["etag"]).not.toBe(etag);
    expect(await etagOf(first, PLANT.id)).toBe(patched.headers["etag"]);
  });

  it("is the same after the server restarts on its database", async () => {
    await using database = await createTestDatabase();
    let etag: string;
    {
      await using before = await startTestServer({}, { database });
      await create(before);
      etag = await etagOf(before, PLANT.id);
    }
    await using after = await startTestServer({}, { database });
    expect(await etagOf(after, PLANT.id)).toBe(etag);
    expect(etag).toBe(await expectedETag(database, PLANT));
  });

  it("differs between two stores holding the same plant: each database keys its own", async () => {
    await using one = await startTestServer();
    await using other = await startTestServer();
    await create(one);
    await create(other);
    expect(await etagOf(one, PLANT.id)).not.toBe(await etagOf(other, PLANT.id));
  });

  it("changes with every change of content, and is the same again for the same content (strong)", async () => {
    await using server = await startTestServer();
    await create(server);
    const first = await etagOf(server, PLANT.id);
    const change = async (body: string, ifMatch: string) =>
      (
        await server.send({
          method: "PATCH",
          ...at(PLANT.id),
          headers: { ...auth, "content-type": "application/merge-patch+json", "if-match": ifMatch },
          body,
        })
      ).headers["etag"] as string;
    const renamed = await change('{"name":"Monstera deliciosa"}', first);
    const untagged = await change('{"tag":null}', renamed);
    expect(new Set([first, renamed, untagged]).size).toBe(3);
    expect(await change('{"name":"Monstera","tag":"indoor"}', untagged)).toBe(first);
    // Another id with the same name and tag is another plant, with another tag.
    await create(server, { ...PLANT, id: PLANT.id + 1n });
    expect(await etagOf(server, PLANT.id + 1n)).not.toBe(first);
  });
});
