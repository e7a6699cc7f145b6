import { describe, expect, it } from "vitest";
import { expectErrorShape, startTestServer, TOKEN } from "./harness.ts";

describe("cross-origin browser calls (PLANTSTORE_CORS_ORIGINS)", () => {
  it("answers the preflight of an allowed origin and lets it read the answers", async () => {
    await using server = await startTestServer({ corsOrigins: ["https://shop.example"] });
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

  it("gives other origins no CORS headers", async () => {
    await using server = await startTestServer({ corsOrigins: ["https://shop.example"] });
    const created = await server.createRaw('{"id":2,"name":"a"}', { origin: "https://evil.example" });
    expect(created.headers["access-control-allow-origin"]).toBeUndefined();
  });

  it("is off by default: OPTIONS is a 405 like any other unknown method", async () => {
    await using server = await startTestServer();
    const response = await server.send({
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
