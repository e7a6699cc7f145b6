import { eventually } from "@plantstore/test-support/eventually";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { rawRequest, type SendOptions, startTestServer, type TestServer, TOKEN } from "../support/harness.ts";
import { openRaw, type RawAnswer } from "../support/raw-socket.ts";
import { databaseUrlOf, issueToken } from "../support/token-helpers.ts";

const BODY_LIMIT = 1024;

let server: TestServer;
let reader: string;
beforeAll(async () => {
  server = await startTestServer({ bodyLimitBytes: BODY_LIMIT, metricsPort: 0 });
  ({ token: reader } = await issueToken(databaseUrlOf(server), { scopes: ["plants:read"] }));
  expect((await server.createRaw('{"id":5,"name":"Headers","tag":"t"}')).status).toBe(200);
});
afterAll(async () => {
  await server.close();
});

const auth = { authorization: `Bearer ${TOKEN}` };
const json = { ...auth, "content-type": "application/json" };
const one = { path: "/plants/5", contractPath: "/plants/{id}" };

/** What a raw connection gets for `request`, once a final answer is complete. */
async function rawAnswer(request: string): Promise<RawAnswer> {
  const client = await openRaw(server.port);
  client.write(request);
  await eventually(() => client.answers().some((a) => a.status >= 200), {
    what: () => `an answer to ${JSON.stringify(request.slice(0, 40))} (${JSON.stringify(client.received())})`,
    timeoutMs: 5_000,
  });
  client.socket.destroy();
  return client.answers().find((a) => a.status >= 200)!;
}

describe("X-Content-Type-Options: nosniff on every answer", () => {
  const requests: Array<[string, SendOptions, number]> = [
    ["a list", { method: "GET", path: "/plants", headers: auth }, 200],
    ["a plant", { method: "GET", ...one, headers: auth }, 200],
    ["a creation", { method: "POST", path: "/plants", headers: json, body: '{"id":6,"name":"x"}' }, 200],
    ["a deletion", { method: "DELETE", path: "/plants/6", contractPath: "/plants/{id}", headers: auth }, 204],
    ["the document", { method: "GET", path: "/openapi.json" }, 200],
    ["the docs page", { method: "GET", path: "/docs" }, 200],
    ["/healthz", { method: "GET", path: "/healthz" }, 200],
    ["no token", { method: "GET", path: "/plants" }, 401],
    ["a bad token", { method: "GET", path: "/plants", headers: { authorization: "Bearer nope" } }, 401],
    ["no such path", { method: "GET", path: "/nowhere" }, 404],
    ["a method the path does not answer", { method: "PUT", path: "/plants", headers: auth }, 405],
    ["malformed JSON", { method: "POST", path: "/plants", headers: json, body: "{" }, 400],
    [
      "a body over the limit",
      { method: "POST", path: "/plants", headers: json, body: "x".repeat(2 * BODY_LIMIT) },
      413,
    ],
    [
      "another media type",
      { method: "POST", path: "/plants", headers: { ...auth, "content-type": "text/plain" } },
      415,
    ],
  ];
  it.each(requests)("on %s (%#)", async (_, request, status) => {
    const response = await server.send(request);
    expect(response.status).toBe(status);
    expect(response.headers["x-content-type-options"]).toBe("nosniff");
  });

  it.each([
    ["malformed HTTP (400)", "THIS IS NOT HTTP\r\n\r\n", 400],
    ["CONNECT (400)", "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n", 400],
    ["oversize headers (431)", `GET /plants HTTP/1.1\r\nHost: x\r\nX-Big: ${"a".repeat(20_000)}\r\n\r\n`, 431],
    ["an over-long target (414)", `GET /plants?${"a".repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 414],
  ])("on the answers written before the app sees a request: %s", async (_, request, status) => {
    const answer = await rawAnswer(request);
    expect(answer.status).toBe(status);
    expect(answer.headers["x-content-type-options"]).toBe("nosniff");
  });

  it("on the answer to a connection beyond the limit (503)", async () => {
    await using crowded = await startTestServer({ maxConnections: 1 });
    const first = await openRaw(crowded.port);
    first.write("GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    await eventually(() => first.answers().length === 1, { what: "the first connection's answer" });
    const second = await openRaw(crowded.port);
    await second.closed;
    const [answer] = second.answers();
    expect(answer?.status).toBe(503);
    expect(answer?.headers["x-content-type-options"]).toBe("nosniff");
    first.socket.destroy();
  });

  it("on the metrics port too", async () => {
    const scrape = await rawRequest(server.metricsUrl!, { method: "GET", path: "/metrics" });
    expect(scrape.headers["x-content-type-options"]).toBe("nosniff");
    const missing = await rawRequest(server.metricsUrl!, { method: "GET", path: "/nowhere" });
    expect(missing.headers["x-content-type-options"]).toBe("nosniff");
  });
});

describe("Cache-Control on answers that depend on Authorization", () => {
  it("GET /plants and GET /plants/{id}: private, no-cache, and a 304 says the same", async () => {
    const list = await server.send({ method: "GET", path: "/plants", headers: auth });
    expect(list.headers["cache-control"]).toBe("private, no-cache");
    const read = await server.send({ method: "GET", ...one, headers: auth });
    expect(read.status).toBe(200);
    expect(read.headers["cache-control"]).toBe("private, no-cache");
    const head = await server.send({ method: "HEAD", ...one, headers: auth });
    expect(head.headers["cache-control"]).toBe("private, no-cache");
    const etag = read.headers["etag"] as string;
    const again = await server.send({ method: "GET", ...one, headers: { ...auth, "if-none-match": etag } });
    expect(again.status).toBe(304);
    expect(again.headers["etag"]).toBe(etag);
    expect(again.headers["cache-control"]).toBe("private, no-cache");
  });

  it("GET /whoami: no-store, as it describes the credential itself", async () => {
    const who = await server.send({ method: "GET", path: "/whoami", headers: auth });
    expect(who.status).toBe(200);
    expect(who.headers["cache-control"]).toBe("no-store");
  });

  it.each([
    ["GET /plants without a token", 401, { method: "GET", path: "/plants" }],
    ["GET /plants/{id} with a bad token", 401, { method: "GET", ...one, headers: { authorization: "Bearer nope" } }],
    ["GET /whoami without a token", 401, { method: "GET", path: "/whoami" }],
    [
      "POST /plants with a read-only token",
      403,
      { method: "POST", path: "/plants", headers: { authorization: "", "content-type": "application/json" } },
    ],
    [
      "DELETE /plants/{id} with a read-only token",
      403,
      { method: "DELETE", path: "/plants/5", contractPath: "/plants/{id}", headers: { authorization: "" } },
    ],
    ["GET /plants/events without a token", 401, { method: "GET", path: "/plants/events" }],
  ] as Array<[string, number, SendOptions]>)("%s: %i with private, no-cache", async (_, status, request) => {
    const headers = { ...request.headers };
    if (headers["authorization"] === "") headers["authorization"] = `Bearer ${reader}`;
    const response = await server.send({ ...request, headers, body: request.method === "POST" ? "{}" : undefined });
    expect(response.status).toBe(status);
    expect(response.headers["cache-control"]).toBe("private, no-cache");
  });
});
