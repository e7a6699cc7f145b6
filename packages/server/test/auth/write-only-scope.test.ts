import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { expectedETag, unkeyedETag } from "../support/expected-etag.ts";
import { expectErrorShape, startTestServer, type TestResponse, type TestServer } from "../support/harness.ts";
import { databaseUrlOf, issueToken } from "../support/token-helpers.ts";

/**
 * What a token with `plants:write` alone may learn, as the server README's scopes section says: the
 * plant as it wrote it (its own body), and whether an id is taken (creating tells it, by design);
 * never content it did not send. A 412's ETag is opaque (keyed by the store's secret), so it cannot
 * confirm guessed content offline.
 */

let server: TestServer;
let writer: Record<string, string>;
beforeAll(async () => {
  server = await startTestServer();
  const { token } = await issueToken(databaseUrlOf(server), { scopes: ["plants:write"] });
  writer = { authorization: `Bearer ${token}` };
});
afterAll(async () => {
  await server.close();
});

const SECRET_PLANT = { id: 70n, name: "Corpse flower", tag: "greenhouse-7" };
const at = (id: bigint) => ({ path: `/plants/${id}`, contractPath: "/plants/{id}" });
const tellsNothingOf = (response: TestResponse) => {
  expect(response.text).not.toContain(SECRET_PLANT.name);
  expect(response.text).not.toContain(SECRET_PLANT.tag);
};

describe("a token with plants:write alone", () => {
  beforeAll(async () => {
    expect((await server.createRaw(JSON.stringify({ ...SECRET_PLANT, id: 70 }))).status).toBe(200);
  });

  it("cannot PATCH (it needs plants:read too, as the answer is the whole plant): 403 (40300), even with If-Match: * and {}", async () => {
    const response = await server.send({
      method: "PATCH",
      ...at(SECRET_PLANT.id),
      headers: { ...writer, "content-type": "application/merge-patch+json", "if-match": "*" },
      body: "{}",
    });
    expectErrorShape(response, 403, 40300);
    expect(response.headers["www-authenticate"]).toBe(
      'Bearer realm="plantstore", error="insufficient_scope", scope="plants:read"',
    );
    expect(response.headers["etag"]).toBeUndefined();
    tellsNothingOf(response);
  });

  it("gets its PUT answered with exactly the plant it sent, creating (201) and replacing under If-Match: * (200)", async () => {
    const put = (headers: Record<string, string>, body: string) =>
      server.send({
        method: "PUT",
        ...at(71n),
        headers: { ...writer, "content-type": "application/json", ...headers },
        body,
      });
    const created = await put({ "if-none-match": "*" }, '{"name":"Aloe"}');
    expect(created.status).toBe(201);
    expect(created.text).toBe('{"id":71,"name":"Aloe"}');
    expect(created.headers["etag"]).toBe(await expectedETag(server.database, { id: 71n, name: "Aloe" }));
    const replaced = await put({ "if-match": "*" }, '{"name":"Aloe vera","tag":"succulent"}');
    expect(replaced.status).toBe(200);
    expect(replaced.text).toBe('{"id":71,"name":"Aloe vera","tag":"succulent"}');
  });

  it("learns from a 412 only that the id is taken and an opaque tag: PUT If-None-Match: * and a stale DELETE", async () => {
    const etag = await expectedETag(server.database, SECRET_PLANT);
    const create = await server.send({
      method: "PUT",
      ...at(SECRET_PLANT.id),
      headers: { ...writer, "content-type": "application/json", "if-none-match": "*" },
      body: '{"name":"Guess"}',
    });
    const remove = await server.send({
      method: "DELETE",
      ...at(SECRET_PLANT.id),
      headers: { ...writer, "if-match": '"x"' },
    });
    for (const refused of [create, remove]) {
      expectErrorShape(refused, 412, 41200);
      expect(refused.headers["etag"]).toBe(etag);
      tellsNothingOf(refused);
    }
    // The tag cannot confirm a guess of the content: it is not the plain digest of it.
    expect(etag).not.toBe(unkeyedETag(SECRET_PLANT));
    expect(await server.database.row(SECRET_PLANT.id)).toEqual(SECRET_PLANT);
  });

  it("learns whether an id is taken by creating, as any writer does: POST of another plant there is 409, naming nothing stored", async () => {
    const response = await server.send({
      method: "POST",
      path: "/plants",
      headers: { ...writer, "content-type": "application/json" },
      body: '{"id":70,"name":"Guess"}',
    });
    expectErrorShape(response, 409, 40900);
    tellsNothingOf(response);
  });
});
