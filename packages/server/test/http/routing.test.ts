import { eventually } from "@plantstore/test-support/eventually";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { expectErrorShape, startTestServer, type TestServer, TOKEN } from "../support/harness.ts";
import { openRaw } from "../support/raw-socket.ts";

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

  // OPTIONS is answered on every path (below).
  it.each([["PUT"], ["PATCH"], ["DELETE"]])(
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

  // GET, HEAD, PATCH and PUT came with issue 26; POST is still not an operation on one plant.
  it.each([["POST"]])(
    "answers %s /plants/{id} with 405 (40500) and Allow: DELETE, GET, HEAD, PATCH, PUT",
    async (method) => {
      const response = await server.send({
        method,
        path: "/plants/1",
        contractPath: "/plants/{id}",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        body: "{}",
      });
      expectErrorShape(response, 405, 40500);
      expect(response.headers["allow"]).toBe("DELETE, GET, HEAD, PATCH, PUT");
    },
  );

  // `/plants/events` is the change feed, a path of its own: not `/plants/{id}` with the id "events".
  it.each([["DELETE"], ["PATCH"], ["PUT"], ["POST"]])(
    "answers %s /plants/events with 405 (40500) and Allow: GET, HEAD, not as a plant id",
    async (method) => {
      const response = await server.send({
        method,
        path: "/plants/events",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
        ...(method === "DELETE" ? {} : { body: "{}" }),
      });
      expectErrorShape(response, 405, 40500);
      expect(response.headers["allow"]).toBe("GET, HEAD");
    },
  );

  it("answers POST /openapi.json with 405 and Allow: GET, HEAD", async () => {
    const response = await server.send({ method: "POST", path: "/openapi.json" });
    expect(response.status).toBe(405);
    expect(response.headers["allow"]).toBe("GET, HEAD");
    expectErrorShape(response, 405, 40500);
  });
});

describe("OPTIONS (RFC 9110 §9.3.7)", () => {
  const options = (path: string, headers: Record<string, string> = {}) =>
    server.send({ method: "OPTIONS", path, headers });

  it("OPTIONS * answers 204 with every method the server answers, no token needed", async () => {
    const client = await openRaw(server.port);
    client.write("OPTIONS * HTTP/1.1\r\nHost: plantstore\r\n\r\n");
    await eventually(() => client.answers().length === 1, { what: () => `an answer (${client.received()})` });
    const [answer] = client.answers();
    expect(answer?.status).toBe(204);
    expect(answer?.headers["allow"]).toBe("DELETE, GET, HEAD, OPTIONS, PATCH, POST, PUT");
    expect(answer?.body).toBe("");
    client.socket.destroy();
  });

  it("OPTIONS /plants/{id} answers 204 with Allow and Accept-Patch naming the merge patch, no token needed", async () => {
    const response = await options("/plants/42");
    expect(response.status).toBe(204);
    expect(response.headers["allow"]).toBe("DELETE, GET, HEAD, OPTIONS, PATCH, PUT");
    expect(response.headers["accept-patch"]).toBe("application/merge-patch+json");
    expect(response.text).toBe("");
  });

  it.each([
    ["/plants", "GET, HEAD, OPTIONS, POST"],
    ["/plants/events", "GET, HEAD, OPTIONS"],
    ["/healthz", "GET, HEAD, OPTIONS"],
    ["/openapi.json", "GET, HEAD, OPTIONS"],
  ])("OPTIONS %s answers 204 with Allow: %s and no Accept-Patch", async (path, allow) => {
    const response = await options(path, { authorization: `Bearer ${TOKEN}` });
    expect(response.status).toBe(204);
    expect(response.headers["allow"]).toBe(allow);
    expect(response.headers["accept-patch"]).toBeUndefined();
  });

  it("OPTIONS on a path with no operation answers 404 (40400)", async () => {
    expectErrorShape(await options("/nowhere"), 404, 40400);
    expectErrorShape(await options("/plants/1/x"), 404, 40400);
  });

  it("leaves a CORS preflight as it was when no origin is allowed: 405 with the path's Allow", async () => {
    const preflight = await options("/plants/42", {
      origin: "https://shop.example",
      "access-control-request-method": "PATCH",
    });
    expectErrorShape(preflight, 405, 40500);
    expect(preflight.headers["allow"]).toBe("DELETE, GET, HEAD, PATCH, PUT");
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

describe("percent-encoded paths (RFC 3986 §6.2.2.2)", () => {
  const auth = { authorization: `Bearer ${TOKEN}` };

  it("DELETE /plants/%36%30 deletes plant 60: encoded unreserved characters name the same resource", async () => {
    expect((await server.createRaw('{"id":60,"name":"sixty"}')).status).toBe(200);
    const deleted = await server.send({
      method: "DELETE",
      path: "/plants/%36%30",
      contractPath: "/plants/60",
      headers: auth,
    });
    expect(deleted.status, deleted.text).toBe(204);
    expect(await server.database.row(60n)).toBeUndefined();
    // Lower-case hex is the same escape (§6.2.2.1), and '-' is unreserved.
    expect((await server.createRaw('{"id":-61,"name":"minus"}')).status).toBe(200);
    const negative = await server.send({
      method: "DELETE",
      path: "/plants/%2d%361",
      contractPath: "/plants/-61",
      headers: auth,
    });
    expect(negative.status, negative.text).toBe(204);
  });

  it("serves the plain paths under encoded unreserved characters", async () => {
    for (const path of ["/%68ealthz", "/openapi%2Ejson", "/%64ocs"]) {
      const response = await server.send({ method: "GET", path, contractPath: "/healthz" });
      expect(response.status, path).toBe(200);
    }
    const listed = await server.send({
      method: "GET",
      path: "/pl%61nts?limit=1",
      contractPath: "/plants",
      headers: auth,
    });
    expect(listed.status).toBe(200);
  });

  it("keeps refusing encoded reserved characters and never decodes twice", async () => {
    expect((await server.createRaw('{"id":60,"name":"sixty"}')).status).toBe(200);
    // An encoded '/' is data, not a separator: no path /plants/60 is made of it.
    expectErrorShape(await server.send({ method: "DELETE", path: "/plants%2F60", headers: auth }), 404, 40400);
    // %25 is '%', reserved: %2536 stays as sent, not '%36' and then '6'.
    expectErrorShape(
      await server.send({ method: "DELETE", path: "/plants/%2536%2530", contractPath: "/plants/{id}", headers: auth }),
      400,
      40005,
    );
    expectErrorShape(
      await server.send({ method: "DELETE", path: "/plants/6%2B0", contractPath: "/plants/{id}", headers: auth }),
      400,
      40005,
    );
    expect(await server.database.row(60n)).toBeDefined();
  });
});
