import { INT64_MAX, INT64_MIN } from "@plantstore/schema";
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
  PlantStorePreconditionFailedError,
  PlantStorePreconditionRequiredError,
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

/** A strong entity tag as the server makes them: 27 base64url characters in quotes. */
const ETAG = /^"[A-Za-z0-9_-]{27}"$/;

describe("getPlant against the real server", () => {
  it("resolves with the plant, its exact id and the ETag of its revision", async () => {
    await client.createPlant({ id: 5_001n, name: "Fern", tag: "fern" });
    const read = await client.getPlant(5_001n);
    expect(read).toEqual({
      notModified: false,
      plant: { id: 5_001n, name: "Fern", tag: "fern" },
      etag: expect.stringMatching(ETAG),
    });
    // The same revision read again has the same tag.
    await expect(client.getPlant(5_001)).resolves.toEqual(read);
  });

  it.each([
    ["2^63 - 1", INT64_MAX],
    ["-2^63", INT64_MIN],
    ["2^53 + 1", 2n ** 53n + 1n],
  ])("reads id %s exactly, and a plant without a tag without one", async (_label, id) => {
    await client.createPlant({ id, name: "edge" });
    const { plant } = await client.getPlant(id);
    expect(plant).toEqual({ id, name: "edge" });
    expect("tag" in plant).toBe(false);
  });

  it("rejects with PlantStoreError 404 / 40401 when no plant has the id", async () => {
    const missing = client.getPlant(5_002n);
    await expect(missing).rejects.toBeInstanceOf(PlantStoreError);
    await expect(missing).rejects.toMatchObject({ status: 404, code: 40401, codeName: "PLANT_NOT_FOUND" });
  });

  it("resolves { notModified: true, etag } on 304 when ifNoneMatch names the current revision", async () => {
    await client.createPlant({ id: 5_003n, name: "Moss" });
    const { etag } = await client.getPlant(5_003n);
    await expect(client.getPlant(5_003n, { ifNoneMatch: etag })).resolves.toEqual({ notModified: true, etag });
    await expect(client.getPlant(5_003n, { ifNoneMatch: ['"stale"', etag] })).resolves.toEqual({
      notModified: true,
      etag,
    });
    await expect(client.getPlant(5_003n, { ifNoneMatch: "*" })).resolves.toEqual({ notModified: true, etag });
  });

  it("resolves with the plant when ifNoneMatch names only another revision", async () => {
    await client.createPlant({ id: 5_004n, name: "Ivy" });
    const before = await client.getPlant(5_004n);
    await client.updatePlant(5_004n, { name: "Ivy II" }, { ifMatch: before.etag });
    const after = await client.getPlant(5_004n, { ifNoneMatch: before.etag });
    expect(after).toMatchObject({ notModified: false, plant: { id: 5_004n, name: "Ivy II" } });
    expect(after.etag).not.toBe(before.etag);
  });
});

describe("updatePlant against the real server", () => {
  it("changes the name, keeps the tag, and resolves with the plant and its new ETag, which a read agrees with", async () => {
    await client.createPlant({ id: 5_101n, name: "Basil", tag: "herb" });
    const { etag } = await client.getPlant(5_101n);
    const changed = await client.updatePlant(5_101n, { name: "Sweet basil" }, { ifMatch: etag });
    expect(changed).toEqual({
      plant: { id: 5_101n, name: "Sweet basil", tag: "herb" },
      etag: expect.stringMatching(ETAG),
    });
    expect(changed.etag).not.toBe(etag);
    await expect(client.getPlant(5_101n)).resolves.toEqual({ notModified: false, ...changed });
  });

  it("removes the tag with tag: null", async () => {
    await client.createPlant({ id: 5_102n, name: "Thyme", tag: "herb" });
    const { etag } = await client.getPlant(5_102n);
    const { plant } = await client.updatePlant(5_102n, { tag: null }, { ifMatch: etag });
    expect(plant).toEqual({ id: 5_102n, name: "Thyme" });
    await expect(server.store.get(5_102n)).resolves.toEqual({ id: 5_102n, name: "Thyme" });
  });

  it("refuses a stale ETag with PlantStorePreconditionFailedError carrying the current one, and changes nothing", async () => {
    await client.createPlant({ id: 5_103n, name: "Sage" });
    const first = await client.getPlant(5_103n);
    // Two writers read the same revision; the first to write wins.
    const winner = await client.updatePlant(5_103n, { name: "Sage A" }, { ifMatch: first.etag });
    const lost = client.updatePlant(5_103n, { name: "Sage B" }, { ifMatch: first.etag });
    await expect(lost).rejects.toBeInstanceOf(PlantStorePreconditionFailedError);
    await expect(lost).rejects.toMatchObject({
      status: 412,
      code: 41200,
      codeName: "PRECONDITION_FAILED",
      currentETag: winner.etag,
    });
    await expect(client.getPlant(5_103n)).resolves.toEqual({ notModified: false, ...winner });
  });

  it("rejects with PlantStoreError 404 when no plant has the id, whatever the ETag", async () => {
    await expect(client.updatePlant(5_104n, { name: "x" }, { ifMatch: '"whatever"' })).rejects.toMatchObject({
      status: 404,
      code: 40401,
    });
  });

  it("rejects with PlantStorePreconditionRequiredError 428 when If-Match is lost on the way", async () => {
    await client.createPlant({ id: 5_105n, name: "Aloe" });
    const { etag } = await client.getPlant(5_105n);
    // Something between the client and the server drops the header the client always sends.
    const dropping = createPlantStoreClient({
      baseUrl: server.url,
      token: TOKEN,
      fetch: (input, init) => {
        const { "If-Match": _dropped, ...headers } = init?.headers as Record<string, string>;
        return checkedFetch(input, { ...init, headers });
      },
    });
    const refused = dropping.updatePlant(5_105n, { name: "Aloe vera" }, { ifMatch: etag });
    await expect(refused).rejects.toBeInstanceOf(PlantStorePreconditionRequiredError);
    await expect(refused).rejects.toMatchObject({ status: 428, code: 42800, codeName: "PRECONDITION_REQUIRED" });
    await expect(server.store.get(5_105n)).resolves.toEqual({ id: 5_105n, name: "Aloe" });
  });
});

describe("replacePlant against the real server", () => {
  it("replaces the ifMatch revision (created: false), dropping a tag the new plant has not", async () => {
    await client.createPlant({ id: 5_201n, name: "Palm", tag: "tree" });
    const { etag } = await client.getPlant(5_201n);
    const replaced = await client.replacePlant(5_201n, { name: "Fan palm" }, { ifMatch: etag });
    expect(replaced).toEqual({
      plant: { id: 5_201n, name: "Fan palm" },
      etag: expect.stringMatching(ETAG),
      created: false,
    });
    await expect(client.getPlant(5_201n)).resolves.toEqual({
      notModified: false,
      plant: replaced.plant,
      etag: replaced.etag,
    });
  });

  it("creates with ifNoneMatch: '*' when the id is free (created: true)", async () => {
    const created = await client.replacePlant(5_202n, { name: "Cactus", tag: "dry" }, { ifNoneMatch: "*" });
    expect(created).toEqual({
      plant: { id: 5_202n, name: "Cactus", tag: "dry" },
      etag: expect.stringMatching(ETAG),
      created: true,
    });
    await expect(client.getPlant(5_202n)).resolves.toMatchObject({ etag: created.etag });
  });

  it("refuses ifNoneMatch: '*' on a taken id with a 412 carrying the stored plant's ETag", async () => {
    await client.createPlant({ id: 5_203n, name: "Orchid" });
    const { etag } = await client.getPlant(5_203n);
    const refused = client.replacePlant(5_203n, { name: "Other" }, { ifNoneMatch: "*" });
    await expect(refused).rejects.toBeInstanceOf(PlantStorePreconditionFailedError);
    await expect(refused).rejects.toMatchObject({ status: 412, code: 41200, currentETag: etag });
    await expect(server.store.get(5_203n)).resolves.toEqual({ id: 5_203n, name: "Orchid" });
  });

  it("refuses a stale ifMatch with a 412 carrying the current ETag", async () => {
    await client.createPlant({ id: 5_204n, name: "Lily" });
    const first = await client.getPlant(5_204n);
    const winner = await client.replacePlant(5_204n, { name: "Lily A" }, { ifMatch: first.etag });
    await expect(client.replacePlant(5_204n, { name: "Lily B" }, { ifMatch: first.etag })).rejects.toMatchObject({
      status: 412,
      currentETag: winner.etag,
    });
  });
});

describe("deletePlant with ifMatch against the real server", () => {
  it("refuses a stale ETag with a 412 carrying the current one, and the plant stays", async () => {
    await client.createPlant({ id: 5_301n, name: "Rose" });
    const first = await client.getPlant(5_301n);
    const changed = await client.updatePlant(5_301n, { name: "Red rose" }, { ifMatch: first.etag });
    const refused = client.deletePlant(5_301n, { ifMatch: first.etag });
    await expect(refused).rejects.toBeInstanceOf(PlantStorePreconditionFailedError);
    await expect(refused).rejects.toMatchObject({ status: 412, code: 41200, currentETag: changed.etag });
    await expect(server.store.get(5_301n)).resolves.toEqual({ id: 5_301n, name: "Red rose" });
  });

  it("deletes the revision the current ETag names", async () => {
    await client.createPlant({ id: 5_302n, name: "Tulip" });
    const { etag } = await client.getPlant(5_302n);
    await expect(client.deletePlant(5_302n, { ifMatch: etag })).resolves.toBeUndefined();
    await expect(server.store.get(5_302n)).resolves.toBeUndefined();
  });
});

describe("the new operations refuse bad input before sending", () => {
  let requests = 0;
  const counting = createPlantStoreClient({
    baseUrl: "http://plants.invalid",
    token: TOKEN,
    fetch: async () => {
      requests += 1;
      return new Response("{}", { status: 200 });
    },
  });

  it.each([
    ["getPlant with an unsafe number id", () => counting.getPlant(2 ** 53), /^invalid id: id /],
    ["getPlant with an unquoted ifNoneMatch", () => counting.getPlant(1, { ifNoneMatch: "abc" }), /ifNoneMatch/],
    ["updatePlant without ifMatch", () => counting.updatePlant(1, { name: "x" }, {} as never), /ifMatch is required/],
    [
      "updatePlant with an unquoted ifMatch",
      () => counting.updatePlant(1, { name: "x" }, { ifMatch: "abc" }),
      /ifMatch/,
    ],
    [
      "updatePlant with an empty list of ETags",
      () => counting.updatePlant(1, { name: "x" }, { ifMatch: [] }),
      /ifMatch/,
    ],
    ["updatePlant with an empty name", () => counting.updatePlant(1, { name: "" }, { ifMatch: '"a"' }), /name/],
    ["updatePlant with an empty tag", () => counting.updatePlant(1, { tag: "" }, { ifMatch: '"a"' }), /tag/],
    [
      "updatePlant changing the id",
      () => counting.updatePlant(1, { id: 2n } as never, { ifMatch: '"a"' }),
      /invalid patch: id cannot be changed/,
    ],
    ["replacePlant without a precondition", () => counting.replacePlant(1, { name: "x" }, {} as never), /ifMatch/],
    [
      "replacePlant with both preconditions",
      () => counting.replacePlant(1, { name: "x" }, { ifMatch: '"a"', ifNoneMatch: "*" } as never),
      /exclude each other/,
    ],
    [
      "replacePlant with another plant's id",
      () => counting.replacePlant(1, { id: 2n, name: "x" } as never, { ifMatch: '"a"' }),
      /id is not the id replaced/,
    ],
    [
      "deletePlant with a header-breaking ifMatch",
      () => counting.deletePlant(1, { ifMatch: '"a"\r\nX: y' }),
      /ifMatch/,
    ],
  ])("rejects %s with PlantStoreInputError", async (_label, call, message) => {
    const refused = call();
    await expect(refused).rejects.toBeInstanceOf(PlantStoreInputError);
    await expect(refused).rejects.toThrow(message);
    expect(requests).toBe(0);
  });
});

describe("the new operations when the answer is not the interface", () => {
  const answering = (status: number, body: string | null, headers: Record<string, string> = {}) =>
    createPlantStoreClient({
      baseUrl: "http://plants.invalid",
      token: TOKEN,
      fetch: async () => new Response(body, { status, headers }),
    });
  const ETAG_HEADER = { etag: '"abcdefghijklmnopqrstuvwxyz0"' };

  it.each([
    ["a 200 without an ETag", answering(200, '{"id":1,"name":"x"}'), /no ETag header/],
    ["a 200 with a malformed ETag", answering(200, '{"id":1,"name":"x"}', { etag: "abc" }), /not an entity tag/],
    ["a 200 for another plant", answering(200, '{"id":2,"name":"x"}', ETAG_HEADER), /answered plant 2 for plant 1/],
    ["a 200 that is not a plant", answering(200, '{"id":1}', ETAG_HEADER), /not a plant/],
    ["a 304 to a read without ifNoneMatch", answering(304, null, ETAG_HEADER), /without If-None-Match/],
    ["a 201 to a read", answering(201, '{"id":1,"name":"x"}', ETAG_HEADER), /expected 200 or an error status/],
  ])("getPlant rejects %s with PlantStoreProtocolError", async (_label, client, message) => {
    const refused = client.getPlant(1);
    await expect(refused).rejects.toBeInstanceOf(PlantStoreProtocolError);
    await expect(refused).rejects.toThrow(message);
  });

  it("replacePlant rejects a 200 to a create, which could only be a replacement", async () => {
    const refused = answering(200, '{"id":1,"name":"x"}', ETAG_HEADER).replacePlant(
      1,
      { name: "x" },
      { ifNoneMatch: "*" },
    );
    await expect(refused).rejects.toBeInstanceOf(PlantStoreProtocolError);
    await expect(refused).rejects.toThrow(/expected 201 or an error status/);
  });
});
