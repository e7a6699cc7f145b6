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

describe("createPlant against the real server", () => {
  it("creates a plant with a tag and resolves with the Plant", async () => {
    await expect(client.createPlant({ id: 1, name: "Fern", tag: "fern" })).resolves.toEqual({
      name: "Fern",
      tag: "fern",
    });
  });

  it("creates a plant without a tag and resolves without one", async () => {
    const plant = await client.createPlant({ id: 2n, name: "Moss" });
    expect(plant).toEqual({ name: "Moss" });
    expect("tag" in plant).toBe(false);
  });

  it("accepts a baseUrl with a trailing slash", async () => {
    const slashed = createPlantStoreClient({ baseUrl: `${server.url}/`, token: TOKEN, fetch: checkedFetch });
    await expect(slashed.createPlant({ id: 3, name: "Ivy" })).resolves.toEqual({ name: "Ivy" });
  });

  it("treats the same plant sent twice as one creation (idempotent replay)", async () => {
    const plant = { id: 4n, name: "Sage", tag: "herb" };
    await expect(client.createPlant(plant)).resolves.toEqual({ name: "Sage", tag: "herb" });
    await expect(client.createPlant(plant)).resolves.toEqual({ name: "Sage", tag: "herb" });
  });
});

describe("createPlant keeps int64 ids exact", () => {
  it.each([
    ["2^53 + 1", 2n ** 53n + 1n],
    ["2^63 - 1", INT64_MAX],
    ["-(2^63 - 1)", -INT64_MAX],
    ["-2^63", INT64_MIN],
  ])("sends id %s exactly", async (_label, id) => {
    await expect(client.createPlant({ id, name: `Plant ${id}` })).resolves.toEqual({ name: `Plant ${id}` });
    // Read back from the store, below the HTTP layer: a rounded id would be stored under a neighbour.
    await expect(server.store.get(id)).resolves.toMatchObject({ id, name: `Plant ${id}` });
    await expect(client.createPlant({ id, name: "Other" })).rejects.toMatchObject({ status: 409, code: 40900 });
  });
});

describe("createPlant when the server refuses", () => {
  it("rejects a different plant under a stored id with PlantStoreError 409 / 40900", async () => {
    await client.createPlant({ id: 10, name: "Cactus" });
    const refused = client.createPlant({ id: 10, name: "Aloe" });
    await expect(refused).rejects.toBeInstanceOf(PlantStoreError);
    await expect(refused).rejects.toMatchObject({ status: 409, code: 40900, codeName: "ID_CONFLICT" });
    await expect(refused).rejects.toThrow(/already stored/);
  });

  it("rejects an unknown token with PlantStoreError 401 / 40101", async () => {
    const intruder = createPlantStoreClient({ baseUrl: server.url, token: "not-the-token", fetch: checkedFetch });
    const refused = intruder.createPlant({ id: 11, name: "Rose" });
    await expect(refused).rejects.toBeInstanceOf(PlantStoreError);
    await expect(refused).rejects.toMatchObject({
      name: "PlantStoreError",
      status: 401,
      code: 40101,
      codeName: "INVALID_TOKEN",
      message: "the bearer token is not valid",
    });
  });
});

describe("createPlant refuses invalid input locally", () => {
  let requests = 0;
  const counting = createPlantStoreClient({
    baseUrl: "http://127.0.0.1:9",
    token: TOKEN,
    fetch: async () => {
      requests += 1;
      return new Response('{"name":"x"}', { status: 200 });
    },
  });

  it.each([
    ["an empty name", { id: 1, name: "" }, /name/],
    ["a name over 256 characters", { id: 1, name: "x".repeat(257) }, /name/],
    ["an id above int64", { id: INT64_MAX + 1n, name: "x" }, /id/],
    ["an unsafe number id", { id: 2 ** 53, name: "x" }, /id .*safe integer/],
    ["a fractional id", { id: 1.5, name: "x" }, /id/],
    ["an empty tag", { id: 1, name: "x", tag: "" }, /tag/],
  ])("rejects %s with PlantStoreInputError and sends nothing", async (_label, input, message) => {
    const refused = counting.createPlant(input);
    await expect(refused).rejects.toBeInstanceOf(PlantStoreInputError);
    await expect(refused).rejects.toThrow(message);
    expect(requests).toBe(0);
  });

  it("names each refused field in issues", async () => {
    await expect(counting.createPlant({ id: "7" as unknown as bigint, name: "" })).rejects.toMatchObject({
      issues: [
        { path: "id", message: expect.stringMatching(/int64/) },
        { path: "name", message: "must not be empty" },
      ],
    });
    expect(requests).toBe(0);
  });
});

describe("createPlant when the answer is not the interface", () => {
  const answering = (response: () => Response) =>
    createPlantStoreClient({ baseUrl: "http://plants.invalid", token: TOKEN, fetch: async () => response() });

  it.each([
    ["a 200 that is not JSON", () => new Response("<html>ok</html>", { status: 200 }), 200],
    ["a 200 without a name", () => new Response('{"tag":"x"}', { status: 200 }), 200],
    ["a 502 from a proxy", () => new Response("Bad Gateway", { status: 502 }), 502],
    ["an error body without a message", () => new Response('{"error":40000}', { status: 400 }), 400],
    [
      "an error code beyond int32",
      () => new Response('{"error":9007199254740993,"message":"x"}', { status: 400 }),
      400,
    ],
    ["a 201 instead of 200", () => new Response('{"name":"x"}', { status: 201 }), 201],
  ])("rejects %s with PlantStoreProtocolError", async (_label, response, status) => {
    const refused = answering(response).createPlant({ id: 1, name: "x" });
    await expect(refused).rejects.toBeInstanceOf(PlantStoreProtocolError);
    await expect(refused).rejects.toMatchObject({ status });
  });

  it("keeps an error code this client does not know, with codeName undefined", async () => {
    const refused = answering(() => new Response('{"error":42299,"message":"slow down"}', { status: 422 })).createPlant(
      { id: 1, name: "x" },
    );
    await expect(refused).rejects.toMatchObject({
      status: 422,
      code: 42299,
      codeName: undefined,
      message: "slow down",
    });
  });

  it("rejects a network failure with PlantStoreProtocolError without a status", async () => {
    const closed = await startRealServer(plantStoreServer);
    const url = closed.url;
    await closed.close();
    const refused = createPlantStoreClient({ baseUrl: url, token: TOKEN, fetch: checkedFetch }).createPlant({
      id: 1,
      name: "x",
    });
    await expect(refused).rejects.toBeInstanceOf(PlantStoreProtocolError);
    await expect(refused).rejects.toMatchObject({ status: undefined });
  });
});

describe("createPlant sends the interface's request", () => {
  it("posts exact int64 JSON to <baseUrl>/plants with bearer and JSON headers", async () => {
    const seen: Request[] = [];
    const recording = createPlantStoreClient({
      baseUrl: "https://plants.example/api/",
      token: "abc.DEF-123",
      fetch: async (input, init) => {
        seen.push(new Request(input, init));
        return new Response('{"name":"Fern"}', { status: 200, headers: { "content-type": "application/json" } });
      },
    });
    await recording.createPlant({ id: INT64_MAX, name: "Fern", extra: 1 } as never);
    const [request] = seen;
    expect(request?.method).toBe("POST");
    expect(request?.url).toBe("https://plants.example/api/plants");
    expect(request?.headers.get("authorization")).toBe("Bearer abc.DEF-123");
    expect(request?.headers.get("content-type")).toBe("application/json");
    await expect(request?.text()).resolves.toBe('{"id":9223372036854775807,"name":"Fern"}');
  });

  it("hands back the caller's abort reason rather than wrapping it", async () => {
    const controller = new AbortController();
    controller.abort(new Error("user gave up"));
    const aborted = createPlantStoreClient({ baseUrl: server.url, token: TOKEN, fetch: checkedFetch }).createPlant(
      { id: 99, name: "x" },
      { signal: controller.signal },
    );
    await expect(aborted).rejects.toThrow("user gave up");
  });
});

describe("createPlantStoreClient", () => {
  it.each([
    ["a relative baseUrl", { baseUrl: "/plants", token: TOKEN }],
    ["a non-http baseUrl", { baseUrl: "ftp://plants.example", token: TOKEN }],
    ["an empty token", { baseUrl: "http://plants.example", token: "" }],
    ["a token with a newline", { baseUrl: "http://plants.example", token: "a\nb" }],
  ])("throws a TypeError for %s", (_label, options) => {
    expect(() => createPlantStoreClient(options)).toThrow(TypeError);
  });
});
