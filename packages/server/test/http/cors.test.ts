import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { expectErrorShape, startTestServer, type TestServer, TOKEN } from "../support/harness.ts";

describe("cross-origin browser calls (PLANTSTORE_CORS_ORIGINS)", () => {
  // One server for the tests that allow an origin: none changes what another sees (their plants
  // have distinct ids), and a start per test was most of this file's time.
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ corsOrigins: ["https://shop.example"] });
  });
  afterAll(() => server?.close());
  it("answers the preflight of an allowed origin and lets it read the answers", async () => {
    const preflight = await server.send({
      method: "OPTIONS",
      path: "/plants",
      headers: {
        origin: "https://shop.example",
        "access-control-request-method": "POST",
        "access-control-request-headers": "authorization, content-type",
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers["access-control-allow-origin"]).toBe("https://shop.example");
    expect(String(preflight.headers["access-control-allow-headers"])).toMatch(/Authorization/);

    const created = await server.createRaw('{"id":1,"name":"a"}', { origin: "https://shop.example" });
    expect(created.status).toBe(200);
    expect(created.headers["access-control-allow-origin"]).toBe("https://shop.example");

    const refused = await server.createRaw('{"id":"x","name":"a"}', { origin: "https://shop.example" });
    expectErrorShape(refused, 400, 40004);
    expect(refused.headers["access-control-allow-origin"]).toBe("https://shop.example");
  });

  it("answers a preflight for a path with no operation as the request would be answered: 404, an Error body", async () => {
    const preflight = await server.send({
      method: "OPTIONS",
      path: "/nope",
      headers: { origin: "https://shop.example", "access-control-request-method": "GET" },
    });
    expectErrorShape(preflight, 404, 40400);
  });

  it("answers a preflight for a method the path does not answer with 405, Allow and an Error body", async () => {
    const onPlants = await server.send({
      method: "OPTIONS",
      path: "/plants",
      headers: { origin: "https://shop.example", "access-control-request-method": "PUT" },
    });
    expectErrorShape(onPlants, 405, 40500);
    expect(onPlants.headers["allow"]).toBe("GET, HEAD, POST");
    const onPlant = await server.send({
      method: "OPTIONS",
      path: "/plants/1",
      headers: { origin: "https://shop.example", "access-control-request-method": "POST" },
    });
    expectErrorShape(onPlant, 405, 40500);
    expect(onPlant.headers["allow"]).toBe("DELETE, GET, HEAD, PATCH, PUT");
  });

  it("still answers 204 to preflights of requests that exist, HEAD and the plain paths included", async () => {
    for (const [path, method] of [
      ["/plants/42", "DELETE"],
      ["/plants", "HEAD"],
      ["/whoami", "GET"],
      ["/openapi.json", "GET"],
    ] as const) {
      const preflight = await server.send({
        method: "OPTIONS",
        path,
        headers: { origin: "https://shop.example", "access-control-request-method": method },
      });
      expect(preflight.status, `${method} ${path}`).toBe(204);
      expect(preflight.headers["access-control-allow-origin"]).toBe("https://shop.example");
    }
  });

  it("lets the page read X-Request-Id, Link, Retry-After and the RateLimit fields it is sent", async () => {
    const listed = await server.send({
      method: "GET",
      path: "/plants?limit=1",
      headers: { origin: "https://shop.example", authorization: `Bearer ${TOKEN}` },
    });
    expect(listed.status).toBe(200);
    const exposed = String(listed.headers["access-control-expose-headers"])
      .split(",")
      .map((name) => name.trim().toLowerCase());
    for (const name of ["x-request-id", "link", "retry-after", "ratelimit", "ratelimit-policy", "www-authenticate"])
      expect(exposed).toContain(name);
    // The rate-limit fields the server sends are the ones listed (draft-ietf-httpapi-ratelimit-headers).
    const success = server.served.paths["/plants"]?.["get"]?.responses["200"] as { headers?: Record<string, unknown> };
    const documented = Object.keys(success.headers ?? {});
    expect(documented).toContain("RateLimit");
    // A page reads the CORS-safelisted ones (Fetch: Cache-Control, Content-Type, …) without their listing.
    const safelisted = [
      "cache-control",
      "content-language",
      "content-length",
      "content-type",
      "expires",
      "last-modified",
      "pragma",
    ];
    for (const name of documented.map((documentedName) => documentedName.toLowerCase()))
      if (!safelisted.includes(name)) expect(exposed).toContain(name);
  });

  it("lets a page PATCH and PUT one plant with If-Match / If-None-Match, and read ETag, Location and Accept-Patch", async () => {
    for (const method of ["PATCH", "PUT"]) {
      const preflight = await server.send({
        method: "OPTIONS",
        path: "/plants/1",
        headers: {
          origin: "https://shop.example",
          "access-control-request-method": method,
          "access-control-request-headers": "authorization, content-type, if-match, if-none-match",
        },
      });
      expect(preflight.status).toBe(204);
      expect(String(preflight.headers["access-control-allow-methods"])).toContain(method);
      expect(String(preflight.headers["access-control-allow-headers"])).toMatch(/If-Match.*If-None-Match/);
    }
    const read = await server.send({
      method: "GET",
      path: "/plants/1",
      contractPath: "/plants/{id}",
      headers: { origin: "https://shop.example", authorization: `Bearer ${TOKEN}` },
    });
    expect(read.status).toBe(200);
    const exposed = String(read.headers["access-control-expose-headers"]).toLowerCase();
    for (const name of ["etag", "location", "accept-patch"]) expect(exposed).toContain(name);
  });

  it("gives other origins no CORS headers", async () => {
    const created = await server.createRaw('{"id":2,"name":"a"}', { origin: "https://evil.example" });
    expect(created.headers["access-control-allow-origin"]).toBeUndefined();
  });

  it("is off by default: OPTIONS is a 405 like any other unknown method", async () => {
    await using plain = await startTestServer();
    const response = await plain.send({
      method: "OPTIONS",
      path: "/plants",
      headers: {
        origin: "https://shop.example",
        "access-control-request-method": "POST",
        authorization: `Bearer ${TOKEN}`,
      },
    });
    expectErrorShape(response, 405, 40500);
  });
});
