import { Agent } from "node:http";

import { checkingFetch } from "@plantstore/test-support/checked-fetch";
import { type CannedAnswer, type StandInServer, startStandInServer } from "@plantstore/test-support/stand-in-server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { appRouter, buildOpenApiDocument, loadConfig } from "../../src/index.ts";
import { rawRequest, startTestServer } from "../support/harness.ts";
import { postPlant, randomPlant } from "../support/load.ts";
import { openRaw, parseAnswers } from "../support/raw-socket.ts";

/**
 * The request helpers check every answer against the seed and the served documents. These tests
 * prove they can fail: a stand-in server answers off the interface, and each helper must refuse.
 */
const ANSWERS: Record<string, CannedAnswer> = {
  "POST /plants": { status: 200, type: "application/json", body: '{"tag":"no name"}' },
  "GET /plants": { status: 200, type: "application/json", body: '[{"name":"no id"}]' },
  "DELETE /plants/7": { status: 200, type: "application/json", body: "{}" },
  "GET /nowhere": { status: 404, type: "text/plain", body: "Not Found" },
  "GET /whoami": { status: 401, type: "application/json", body: '{"error":"40100","message":"m"}' },
  "GET /healthz": { status: 200, type: "text/plain", body: "ok" },
  "GET /readyz": { status: 503, type: "text/plain", body: "down" },
};

// It serves the seed as its /openapi.json.
let stand: StandInServer;
let url: string;
beforeAll(async () => {
  stand = await startStandInServer(
    (req) =>
      ANSWERS[`${req.method} ${req.url}`] ?? {
        status: 500,
        type: "application/json",
        body: '{"error":50000,"message":"m"}',
      },
  );
  url = stand.url;
});
afterAll(async () => {
  await stand.close();
});

describe("rawRequest (and so every server test's send) with an answer off the interface", () => {
  it.each([
    [
      "a 200 to POST /plants that is not a Plant",
      "POST",
      "/plants",
      /seed openapi\.json: POST \/plants 200 body .* fails/,
    ],
    ["a 200 to GET /plants whose items lack an id", "GET", "/plants", /GET \/plants 200 body .* fails/],
    [
      "a 200 to DELETE /plants/{id}, declared 204",
      "DELETE",
      "/plants/7",
      /DELETE \/plants\/7 answered 200, which the document does not declare/,
    ],
    ["a plain-text 404", "GET", "/nowhere", /404 has Content-Type text\/plain/],
    ["an Error whose code is a string", "GET", "/whoami", /GET \/whoami 401 body .* fails/],
    [
      "a plain-text 503 from /readyz, which is outside the documents only when it succeeds",
      "GET",
      "/readyz",
      /503 has Content-Type text\/plain/,
    ],
  ])("rejects %s", async (_label, method, path, reason) => {
    await expect(rawRequest(url, { method, path })).rejects.toThrow(reason);
  });

  it("passes a successful non-API answer, which the documents do not describe", async () => {
    await expect(rawRequest(url, { method: "GET", path: "/healthz" })).resolves.toMatchObject({
      status: 200,
      text: "ok",
    });
  });
});

describe("the other request helpers with an answer off the interface", () => {
  it("load.ts postPlant rejects instead of reporting an answered outcome", async () => {
    const agent = new Agent({ keepAlive: true });
    try {
      await expect(postPlant(url, "t", agent, randomPlant())).rejects.toThrow(/POST \/plants 200 body .* fails/);
    } finally {
      agent.destroy();
    }
  });

  it("raw-socket answers: a 4xx that is not an Error body throws", async () => {
    const text = "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nbad";
    expect(() => parseAnswers(text)).toThrow(/400 has Content-Type text\/plain/);
    const client = await openRaw(Number(new URL(url).port));
    client.write("GET /nowhere HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    await client.closed;
    expect(() => client.answers()).toThrow(/404 has Content-Type text\/plain/);
  });

  it("checkingFetch (the client tests' fetch) reports and throws, against the document the server serves", async () => {
    const seen: unknown[] = [];
    const checked = checkingFetch((error) => seen.push(error));
    await expect(checked(`${url}/plants`, { method: "POST" })).rejects.toThrow(/POST \/plants 200 body .* fails/);
    // The stand-in serves the seed as its document, which has no GET /plants: the served one is used, not the router's.
    await expect(checked(`${url}/plants`)).rejects.toThrow(
      /served http:\/\/127\.0\.0\.1:\d+\/openapi\.json: GET \/plants answered 200, which the document does not declare/,
    );
    expect(seen).toHaveLength(2);
  });
});

describe("the router's document, which stands in where a server's own is not at hand", () => {
  it("is the document a server with the default settings serves", async () => {
    await using server = await startTestServer();
    expect(buildOpenApiDocument(appRouter, { bodyLimitBytes: loadConfig({}).bodyLimitBytes })).toEqual(server.served);
  });
});
