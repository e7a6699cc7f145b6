import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { expectErrorShape, OTHER_TOKEN, startTestServer, type TestServer, TOKEN } from "../support/harness.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

const post = (headers: Record<string, string>, body = '{"id":1,"name":"a"}') =>
  server.send({ method: "POST", path: "/plants", headers: { "content-type": "application/json", ...headers }, body });

describe("POST /plants without a usable bearer token", () => {
  it("answers 401 (40100) with a plain Bearer challenge when no token is sent", async () => {
    const response = await post({});
    expectErrorShape(response, 401, 40100);
    expect(response.headers["www-authenticate"]).toBe('Bearer realm="plantstore"');
  });

  it.each([["Basic dXNlcjpwYXNz"], ["Token abc"], ["Bearer"], ["Bearer "]])(
    "treats Authorization %j as no bearer token (401)",
    async (authorization) => {
      const response = await post({ authorization });
      expect(response.status).toBe(401);
      expect(String(response.headers["www-authenticate"])).toMatch(/^Bearer realm="plantstore"/);
    },
  );

  it.each([
    ["Bearer wrong-token"],
    [`Bearer ${TOKEN}x`],
    [`Bearer ${TOKEN.slice(0, -1)}`],
    ["Bearer a b"],
    ["Bearer {}"],
  ])("answers 401 (40101) with error=invalid_token for %j", async (authorization) => {
    const response = await post({ authorization });
    expectErrorShape(response, 401, 40101);
    expect(response.headers["www-authenticate"]).toBe('Bearer realm="plantstore", error="invalid_token"');
  });

  it("checks the token before the body: no validation detail leaks to strangers", async () => {
    expectErrorShape(await post({}, '{"id":"bad"'), 401, 40100);
    expectErrorShape(await post({ authorization: "Bearer nope" }, "[]"), 401, 40101);
    const wrongType = await server.send({
      method: "POST",
      path: "/plants",
      headers: { authorization: "Bearer nope", "content-type": "text/plain" },
      body: "x",
    });
    expectErrorShape(wrongType, 401, 40101);
  });
});

describe("POST /plants with a valid bearer token", () => {
  it.each([["Bearer"], ["bearer"], ["BEARER"], ["BeArEr"]])("accepts the scheme written %s", async (scheme) => {
    const id = Math.floor(Math.random() * 1e9);
    const response = await post({ authorization: `${scheme} ${TOKEN}` }, `{"id":${id},"name":"a"}`);
    expect(response.status).toBe(200);
  });

  it("accepts every configured token", async () => {
    expect((await post({ authorization: `Bearer ${OTHER_TOKEN}` }, '{"id":42,"name":"b"}')).status).toBe(200);
  });
});
