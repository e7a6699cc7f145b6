import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectErrorShape, startTestServer, TOKEN, type TestServer } from "./harness.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

describe("requests outside the interface", () => {
  it.each([["/"], ["/plant"], ["/plants/1/x"], ["/Plants"], ["/plants/"], ["/v1/plants"], ["/%ZZ"]])(
    "answers 404 (40400) with an Error body for %s",
    async (path) => {
      const response = await server.send({
        method: "POST",
        path,
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        body: '{"id":1,"name":"a"}',
      });
      expectErrorShape(response, 404, 40400);
    },
  );

  it.each([["PUT"], ["PATCH"], ["DELETE"], ["OPTIONS"]])(
    "answers %s /plants with 405 (40500) and Allow: GET, HEAD, POST",
    async (method) => {
      const response = await server.send({ method, path: "/plants", headers: { authorization: `Bearer ${TOKEN}` } });
      expectErrorShape(response, 405, 40500);
      expect(response.headers["allow"]).toBe("GET, HEAD, POST");
    },
  );

  it("answers HEAD on every method Allow names GET for, as GET without the body", async () => {
    for (const path of ["/plants", "/whoami", "/openapi.json", "/healthz"]) {
      const allow = (await server.send({ method: "PUT", path, headers: { authorization: `Bearer ${TOKEN}` } })).headers[
        "allow"
      ] as string;
      expect(allow.split(", ")).toEqual(expect.arrayContaining(["GET", "HEAD"]));
      const head = await server.send({ method: "HEAD", path, headers: { authorization: `Bearer ${TOKEN}` } });
      expect(head.status, path).toBe(200);
      expect(head.text).toBe("");
    }
  });

  it.each([["GET"], ["POST"], ["PUT"]])(
    "answers %s /plants/{id} with 405 (40500) and Allow: DELETE",
    async (method) => {
      const response = await server.send({
        method,
        path: "/plants/1",
        contractPath: "/plants/{id}",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        body: method === "GET" ? undefined : "{}",
      });
      expectErrorShape(response, 405, 40500);
      expect(response.headers["allow"]).toBe("DELETE");
    },
  );

  it("answers POST /openapi.json with 405 and Allow: GET, HEAD", async () => {
    const response = await server.send({ method: "POST", path: "/openapi.json" });
    expect(response.status).toBe(405);
    expect(response.headers["allow"]).toBe("GET, HEAD");
    expectErrorShape(response, 405, 40500);
  });
});

describe("public endpoints", () => {
  it("GET /healthz answers 200 without a token", async () => {
    const response = await server.send({ method: "GET", path: "/healthz" });
    expect(response.status).toBe(200);
    expect(response.json).toEqual({ status: "ok" });
  });

  it("GET /openapi.json answers 200 without a token", async () => {
    const response = await server.send({ method: "GET", path: "/openapi.json" });
    expect(response.status).toBe(200);
    expect(response.headers["content-type"]).toMatch(/^application\/json/);
    expect((response.json as { openapi: string }).openapi).toBe("3.1.0");
  });

  it("HEAD /openapi.json answers 200 with no body", async () => {
    const response = await server.send({ method: "HEAD", path: "/openapi.json" });
    expect(response.status).toBe(200);
    expect(response.text).toBe("");
  });
});
