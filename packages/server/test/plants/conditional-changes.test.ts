import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { expectedETag } from "../support/expected-etag.ts";
import { expectErrorShape, startTestServer, type TestResponse, type TestServer, TOKEN } from "../support/harness.ts";
import { databaseUrlOf, issueToken } from "../support/token-helpers.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

const MERGE_PATCH = "application/merge-patch+json";
const auth = { authorization: `Bearer ${TOKEN}` };
const at = (id: bigint | number) => ({ path: `/plants/${id}`, contractPath: "/plants/{id}" });

const read = (id: bigint | number) => server.send({ method: "GET", ...at(id), headers: auth });
const etagOf = async (id: bigint | number) => (await read(id)).headers["etag"] as string;
const patch = (id: bigint | number, body: string, headers: Record<string, string> = {}) =>
  server.send({ method: "PATCH", ...at(id), headers: { ...auth, "content-type": MERGE_PATCH, ...headers }, body });
const put = (id: bigint | number, body: string, headers: Record<string, string> = {}) =>
  server.send({ method: "PUT", ...at(id), headers: { ...auth, "content-type": "application/json", ...headers }, body });
const remove = (id: bigint | number, headers: Record<string, string> = {}) =>
  server.send({ method: "DELETE", ...at(id), headers: { ...auth, ...headers } });

const message = (response: TestResponse) => (response.json as { message: string }).message;

let nextId = 1000n;
/** A fresh plant, and its ETag as GET answers it. */
async function plant(body: { name: string; tag?: string } = { name: "Fern", tag: "indoor" }) {
  const id = nextId++;
  expect((await server.createRaw(JSON.stringify({ id: Number(id), ...body }))).status).toBe(200);
  return { id, etag: await etagOf(id) };
}

describe("PATCH /plants/{id}", () => {
  it("changes the name with If-Match naming the current ETag: 200, the whole plant and its new ETag", async () => {
    const { id, etag } = await plant();
    const response = await patch(id, '{"name":"Maidenhair"}', { "if-match": etag });
    expect(response.status).toBe(200);
    expect(response.text).toBe(`{"id":${id},"name":"Maidenhair","tag":"indoor"}`);
    expect(response.headers["etag"]).toBe(
      await expectedETag(server.database, { id, name: "Maidenhair", tag: "indoor" }),
    );
    expect(response.headers["etag"]).not.toBe(etag);
    expect((await read(id)).text).toBe(response.text);
  });

  it('removes the tag on "tag": null, and keeps what the patch leaves out', async () => {
    const { id, etag } = await plant();
    const response = await patch(id, '{"tag":null}', { "if-match": etag });
    expect(response.status).toBe(200);
    expect(response.text).toBe(`{"id":${id},"name":"Fern"}`);
    expect((await read(id)).text).toBe(`{"id":${id},"name":"Fern"}`);
    const tagged = await patch(id, '{"tag":"shade"}', { "if-match": response.headers["etag"] as string });
    expect(tagged.text).toBe(`{"id":${id},"name":"Fern","tag":"shade"}`);
  });

  it("answers 428 (42800) without If-Match, and changes nothing", async () => {
    const { id } = await plant();
    const response = await patch(id, '{"name":"Blind"}');
    expectErrorShape(response, 428, 42800);
    expect(message(response)).toContain("If-Match");
    expect((await read(id)).text).toContain('"name":"Fern"');
  });

  it("answers 412 (41200) with the current ETag when If-Match is stale, and changes nothing", async () => {
    const { id, etag } = await plant();
    const first = await patch(id, '{"name":"First"}', { "if-match": etag });
    expect(first.status).toBe(200);
    const second = await patch(id, '{"name":"Second"}', { "if-match": etag });
    expectErrorShape(second, 412, 41200);
    const current = first.headers["etag"] as string;
    expect(second.headers["etag"]).toBe(current);
    expect(message(second)).toContain(current);
    expect((await read(id)).text).toContain('"name":"First"');
    // If-Match compares strongly: the same tag marked weak does not match.
    expectErrorShape(await patch(id, '{"name":"Weak"}', { "if-match": `W/${current}` }), 412, 41200);
    // A list holds when any of its tags is the current one; `*` holds for any stored plant.
    expect((await patch(id, '{"name":"Listed"}', { "if-match": `"x", ${current}` })).status).toBe(200);
    expect((await patch(id, '{"name":"Any"}', { "if-match": "*" })).status).toBe(200);
  });

  it("answers 404 (40401) for a missing plant whatever the preconditions say", async () => {
    expectErrorShape(await patch(99_999, '{"name":"x"}'), 404, 40401);
    expectErrorShape(await patch(99_999, '{"name":"x"}', { "if-match": '"stale"' }), 404, 40401);
    expectErrorShape(await patch(99_999, '{"name":"x"}', { "if-match": "*" }), 404, 40401);
  });

  it("refuses an id in the body with 400 (40004) naming id, and changes nothing", async () => {
    const { id, etag } = await plant();
    for (const body of [`{"id":${id},"name":"Renamed"}`, '{"id":1,"name":"Renamed"}']) {
      const response = await patch(id, body, { "if-match": etag });
      expectErrorShape(response, 400, 40004);
      expect(message(response)).toMatch(/^id /);
    }
    expect(await etagOf(id)).toBe(etag);
  });

  it("refuses an unknown field with 400 (40004) naming it, unlike POST, and changes nothing", async () => {
    const { id, etag } = await plant();
    const response = await patch(id, '{"nmae":"Known"}', { "if-match": etag });
    expectErrorShape(response, 400, 40004);
    expect(message(response)).toContain("nmae");
    expect(await etagOf(id)).toBe(etag);
  });

  it.each([
    ['{"name":""}', /^name /],
    ['{"name":null}', /^name /],
    ['{"tag":""}', /^tag /],
    ['{"tag":7}', /^tag /],
    ['{"name":"\\u0000"}', /^name /],
    ['{"name":"a","name":"b"}', /^the body has the member "name" more than once$/],
  ])("refuses %s with 400 (40004) naming the field", async (body, named) => {
    const { id, etag } = await plant();
    const response = await patch(id, body, { "if-match": etag });
    expectErrorShape(response, 400, 40004);
    expect(message(response)).toMatch(named);
  });

  it("answers 415 (41500) with Accept-Patch to any Content-Type but application/merge-patch+json", async () => {
    const { id, etag } = await plant();
    for (const contentType of ["application/json", "text/plain", "application/json-patch+json"]) {
      const response = await patch(id, '{"name":"x"}', { "if-match": etag, "content-type": contentType });
      expectErrorShape(response, 415, 41500);
      expect(response.headers["accept-patch"]).toBe(MERGE_PATCH);
      expect(message(response)).toContain(MERGE_PATCH);
    }
    expect(
      (await patch(id, '{"name":"x"}', { "if-match": etag, "content-type": `${MERGE_PATCH}; charset=utf-8` })).status,
    ).toBe(200);
  });

  it("needs plants:write: a read-only token gets 403 (40300) and the plant stays", async () => {
    const { id, etag } = await plant();
    const { token } = await issueToken(databaseUrlOf(server), { scopes: ["plants:read"] });
    const reader = { authorization: `Bearer ${token}` };
    expect((await server.send({ method: "GET", ...at(id), headers: reader })).status).toBe(200);
    expectErrorShape(await patch(id, '{"name":"x"}', { ...reader, "if-match": etag }), 403, 40300);
    expectErrorShape(await put(id, '{"name":"x"}', { ...reader, "if-match": etag }), 403, 40300);
    expectErrorShape(await remove(id, { ...reader, "if-match": etag }), 403, 40300);
    expect(await etagOf(id)).toBe(etag);
  });
});

describe("PUT /plants/{id}", () => {
  it("with If-None-Match: * on a free id creates the plant: 201, Location, ETag and the plant", async () => {
    const id = nextId++;
    const response = await put(id, '{"name":"Palm"}', { "if-none-match": "*" });
    expect(response.status).toBe(201);
    expect(response.text).toBe(`{"id":${id},"name":"Palm"}`);
    expect(response.headers["location"]).toBe(`/plants/${id}`);
    expect(response.headers["etag"]).toBe(await expectedETag(server.database, { id, name: "Palm" }));
    expect((await read(id)).text).toBe(response.text);
  });

  it("with If-None-Match: * on a taken id answers 412 (41200) with the stored plant's ETag, and stores nothing", async () => {
    const { id, etag } = await plant();
    const response = await put(id, '{"name":"Intruder"}', { "if-none-match": "*" });
    expectErrorShape(response, 412, 41200);
    expect(response.headers["etag"]).toBe(etag);
    expect(await etagOf(id)).toBe(etag);
  });

  it("with If-Match naming the current ETag replaces the plant: a tag left out is removed", async () => {
    const { id, etag } = await plant();
    const response = await put(id, '{"name":"Replaced"}', { "if-match": etag });
    expect(response.status).toBe(200);
    expect(response.text).toBe(`{"id":${id},"name":"Replaced"}`);
    expect(response.headers["etag"]).toBe(await expectedETag(server.database, { id, name: "Replaced" }));
    expect(response.headers["location"]).toBeUndefined();
  });

  it("with a stale If-Match, or If-Match on a free id, answers 412 (41200)", async () => {
    const { id, etag } = await plant();
    expect((await put(id, '{"name":"Now"}', { "if-match": etag })).status).toBe(200);
    const stale = await put(id, '{"name":"Late"}', { "if-match": etag });
    expectErrorShape(stale, 412, 41200);
    expect(stale.headers["etag"]).toBe(await etagOf(id));
    const free = await put(nextId++, '{"name":"Nowhere"}', { "if-match": etag });
    expectErrorShape(free, 412, 41200);
    expect(free.headers["etag"]).toBeUndefined();
  });

  it("without If-Match or If-None-Match answers 428 (42800), taken id or free", async () => {
    const { id } = await plant();
    expectErrorShape(await put(id, '{"name":"x"}'), 428, 42800);
    expectErrorShape(await put(nextId++, '{"name":"x"}'), 428, 42800);
  });

  it("refuses an id in the body with 400 (40004), a body without a name likewise, JSON only (415)", async () => {
    const { id, etag } = await plant();
    expect(message(await put(id, `{"id":${id},"name":"x"}`, { "if-match": etag }))).toMatch(/^id /);
    expect(message(await put(id, '{"tag":"x"}', { "if-match": etag }))).toMatch(/^name /);
    expectErrorShape(await put(id, '{"name":"x"}', { "if-match": etag, "content-type": MERGE_PATCH }), 415, 41500);
    expect(await etagOf(id)).toBe(etag);
  });
});

describe("DELETE /plants/{id} with If-Match", () => {
  it("answers 412 (41200) with the current ETag when it is stale, and the plant stays", async () => {
    const { id } = await plant();
    const response = await remove(id, { "if-match": '"stale"' });
    expectErrorShape(response, 412, 41200);
    expect(response.headers["etag"]).toBe(await etagOf(id));
    expect((await read(id)).status).toBe(200);
  });

  it("deletes when it names the current ETag: 204", async () => {
    const { id, etag } = await plant();
    const response = await remove(id, { "if-match": etag });
    expect(response.status).toBe(204);
    expect(response.text).toBe("");
    expectErrorShape(await read(id), 404, 40401);
  });

  it("answers 404 (40401) for a missing plant whatever If-Match says", async () => {
    expectErrorShape(await remove(99_998, { "if-match": '"stale"' }), 404, 40401);
    expectErrorShape(await remove(99_998, { "if-match": "*" }), 404, 40401);
  });
});

describe("If-None-Match on a write: evaluated after If-Match (RFC 9110 §13.2.2), never refused", () => {
  it("PUT with the current If-Match and If-None-Match: * answers 412 (41200) naming If-None-Match, and stores nothing", async () => {
    const { id, etag } = await plant();
    const response = await put(id, '{"name":"x"}', { "if-match": etag, "if-none-match": "*" });
    expectErrorShape(response, 412, 41200);
    expect(response.headers["etag"]).toBe(etag);
    expect(message(response)).toContain("If-None-Match: *");
    expect(await etagOf(id)).toBe(etag);
  });

  it("PUT with If-Match: * and If-None-Match: * on a free id answers 412 (41200), and creates nothing", async () => {
    const id = nextId++;
    const response = await put(id, '{"name":"x"}', { "if-match": "*", "if-none-match": "*" });
    expectErrorShape(response, 412, 41200);
    expect(response.headers["etag"]).toBeUndefined();
    expect(message(response)).toContain("If-Match: *");
    expectErrorShape(await read(id), 404, 40401);
  });

  it("PUT evaluates If-Match first: a stale one is the 412's reason whatever If-None-Match says", async () => {
    const { id, etag } = await plant();
    const response = await put(id, '{"name":"x"}', { "if-match": '"stale"', "if-none-match": "*" });
    expectErrorShape(response, 412, 41200);
    expect(message(response)).toContain('If-Match: "stale"');
    expect(await etagOf(id)).toBe(etag);
  });

  it("PUT with If-None-Match naming the current tag answers 412 (41200), with If-Match or without", async () => {
    const { id, etag } = await plant();
    const both: Record<string, string>[] = [
      { "if-none-match": etag },
      { "if-match": etag, "if-none-match": `"x", ${etag}` },
    ];
    for (const headers of both) {
      const response = await put(id, '{"name":"x"}', headers);
      expectErrorShape(response, 412, 41200);
      expect(response.headers["etag"]).toBe(etag);
      expect(message(response)).toContain("If-None-Match");
    }
    // Weak comparison, as for a read: a tag marked weak still matches.
    expectErrorShape(await put(id, '{"name":"x"}', { "if-match": etag, "if-none-match": `W/${etag}` }), 412, 41200);
    expect(await etagOf(id)).toBe(etag);
  });

  it("PUT with If-None-Match naming another tag replaces with If-Match, and is 428 (42800) without it", async () => {
    const { id, etag } = await plant();
    const alone = await put(id, '{"name":"x"}', { "if-none-match": '"other"' });
    expectErrorShape(alone, 428, 42800);
    expectErrorShape(await put(nextId++, '{"name":"x"}', { "if-none-match": '"other"' }), 428, 42800);
    expect(await etagOf(id)).toBe(etag);
    const replaced = await put(id, '{"name":"Replaced"}', { "if-match": etag, "if-none-match": '"other"' });
    expect(replaced.status).toBe(200);
    expect(replaced.text).toBe(`{"id":${id},"name":"Replaced"}`);
  });

  it("PATCH with If-Match and an If-None-Match that matches answers 412 (41200), and changes nothing", async () => {
    const { id, etag } = await plant();
    for (const ifNoneMatch of ["*", etag, `W/${etag}`]) {
      const response = await patch(id, '{"name":"x"}', { "if-match": etag, "if-none-match": ifNoneMatch });
      expectErrorShape(response, 412, 41200);
      expect(response.headers["etag"]).toBe(etag);
      expect(message(response)).toContain(`If-None-Match: ${ifNoneMatch}`);
    }
    expect(await etagOf(id)).toBe(etag);
  });

  it("PATCH with If-Match and an If-None-Match naming another tag changes the plant", async () => {
    const { id, etag } = await plant();
    const response = await patch(id, '{"name":"Changed"}', { "if-match": etag, "if-none-match": '"other"' });
    expect(response.status).toBe(200);
    expect(response.text).toBe(`{"id":${id},"name":"Changed","tag":"indoor"}`);
  });

  it("PATCH without If-Match: 412 (41200) when If-None-Match matches, else 428 (42800); 404 for a missing plant", async () => {
    const { id, etag } = await plant();
    expectErrorShape(await patch(id, '{"name":"x"}', { "if-none-match": etag }), 412, 41200);
    expectErrorShape(await patch(id, '{"name":"x"}', { "if-none-match": "*" }), 412, 41200);
    expectErrorShape(await patch(id, '{"name":"x"}', { "if-none-match": '"other"' }), 428, 42800);
    expectErrorShape(await patch(99_997, '{"name":"x"}', { "if-none-match": "*" }), 404, 40401);
    expect(await etagOf(id)).toBe(etag);
  });

  it("DELETE with If-None-Match: * on a stored plant answers 412 (41200) with its ETag, and the plant stays", async () => {
    const { id, etag } = await plant();
    const response = await remove(id, { "if-none-match": "*" });
    expectErrorShape(response, 412, 41200);
    expect(response.headers["etag"]).toBe(etag);
    expect(message(response)).toContain("If-None-Match: *");
    expect((await read(id)).status).toBe(200);
    expectErrorShape(await remove(99_996, { "if-none-match": "*" }), 404, 40401);
  });

  it("DELETE with If-None-Match deletes only when it names none of the plant's tags", async () => {
    const { id, etag } = await plant();
    expectErrorShape(await remove(id, { "if-none-match": etag }), 412, 41200);
    expectErrorShape(await remove(id, { "if-match": etag, "if-none-match": `W/${etag}` }), 412, 41200);
    expect((await read(id)).status).toBe(200);
    expect((await remove(id, { "if-match": etag, "if-none-match": '"other"' })).status).toBe(204);
    expectErrorShape(await read(id), 404, 40401);
    const other = await plant();
    expect((await remove(other.id, { "if-none-match": '"other"' })).status).toBe(204);
  });
});

describe("POST /plants after a change", () => {
  it("compares a replay with the plant as it is now: the first body conflicts (409), the current one replays (200)", async () => {
    const { id, etag } = await plant({ name: "Original" });
    expect((await patch(id, '{"name":"Changed"}', { "if-match": etag })).status).toBe(200);
    expectErrorShape(await server.createRaw(`{"id":${id},"name":"Original"}`), 409, 40900);
    expect((await server.createRaw(`{"id":${id},"name":"Changed"}`)).status).toBe(200);
  });
});
