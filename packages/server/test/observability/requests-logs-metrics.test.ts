import { spawnSync } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";

import { eventually } from "@plantstore/test-support/eventually";
import { afterEach, describe, expect, it } from "vitest";

import { type Config, startServer } from "../../src/index.ts";
import { createLogger } from "../../src/logger.ts";
import { closeIdleClientConnections } from "../support/client-connections.ts";
import { expectErrorShape, logLines, rawRequest, testConfig, TOKEN } from "../support/harness.ts";
import { BIN } from "../support/spawned-server.ts";
import { createTestDatabase } from "../support/test-database.ts";

const cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0)) await cleanup();
});

/** The real server with its JSON log lines captured in memory. */
async function serverWithLogs(overrides: Partial<Config> = {}) {
  const database = await createTestDatabase();
  const { lines, sink } = logLines();
  const running = await startServer({
    config: testConfig(database.url, { logLevel: "info", ...overrides }),
    logger: createLogger(overrides.logLevel ?? "info", sink),
  });
  cleanups.push(async () => {
    closeIdleClientConnections(running.url);
    await running.close();
    await database.dispose();
  });
  const post = (body: string, headers: Record<string, string> = {}) =>
    rawRequest(running.url, {
      method: "POST",
      path: "/plants",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", ...headers },
      body,
    });
  return { running, lines, post, databaseUrl: database.url };
}

describe("request ids", () => {
  it("echoes a safe incoming X-Request-Id and logs it on the request's line", async () => {
    const { lines, post } = await serverWithLogs();
    const response = await post('{"id":1,"name":"a"}', { "x-request-id": "abc-123" });
    expect(response.headers["x-request-id"]).toBe("abc-123");
    const line = await eventually(
      () => lines.map((l) => JSON.parse(l) as Record<string, unknown>).find((l) => l["reqId"] === "abc-123"),
      { what: "the request's log line" },
    );
    expect(line).toMatchObject({ method: "POST", route: "/plants", status: 200, msg: "request" });
  });

  it.each([["has spaces"], ["x".repeat(129)], ["<script>"], ['quo"te']])(
    "replaces an unsafe id %j with a new UUID",
    async (id) => {
      const { post } = await serverWithLogs();
      const response = await post('{"id":2,"name":"a"}', { "x-request-id": id });
      expect(response.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/);
    },
  );

  it("puts a request id on every line written while serving requests", async () => {
    const { lines, post, running } = await serverWithLogs();
    await post('{"id":3,"name":"a"}');
    await post("not json");
    await running.store.close();
    await post('{"id":4,"name":"a"}'); // a 500: logged as an error line too
    await eventually(() => lines.some((l) => l.includes('"msg":"request failed"')), { what: "the 500's error line" });
    const requestLines = lines.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(requestLines.length).toBeGreaterThanOrEqual(4);
    // Webhook delivery runs in the background (its poll may meet the closed store): it names its component instead.
    for (const line of requestLines) {
      if (line["component"] !== "webhooks") expect(typeof line["reqId"], JSON.stringify(line)).toBe("string");
    }
    expect(requestLines.some((l) => l["msg"] === "request failed" && l["level"] === 50)).toBe(true);
  });
});

describe("the log during a storm of failing requests", () => {
  it("writes the first failure of a kind with its stack and only the count of its repeats", async () => {
    const { lines, post, running } = await serverWithLogs();
    // Every write from here on fails the same way (on both backends).
    await running.store.close();
    const answers = await Promise.all(Array.from({ length: 200 }, (_, i) => post(`{"id":${i + 1},"name":"a"}`)));
    expect(answers.every((a) => a.status === 500)).toBe(true);
    const metrics = await rawRequest(running.url, {
      method: "GET",
      path: "/metrics",
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    // The server's own stop writes the count still held for the interval.
    closeIdleClientConnections(running.url);
    await running.close();
    const failed = lines
      .map((l) => JSON.parse(l) as Record<string, unknown>)
      .filter((l) => typeof l["msg"] === "string" && l["msg"].startsWith("request failed"));
    expect(failed).toHaveLength(2);
    expect(failed[0]).toMatchObject({ msg: "request failed", code: "INTERNAL", level: 50 });
    expect(JSON.stringify(failed[0]!["err"])).toContain("stack");
    expect(failed[1]).toMatchObject({ msg: "request failed (repeats)", code: "INTERNAL", repeats: 199 });
    expect(failed[1]).not.toHaveProperty("err");
    expect(typeof failed[1]!["reqId"]).toBe("string");
    // The metrics keep the full count.
    expect(metrics.text).toMatch(/^plantstore_errors_total\{code="INTERNAL"\} 200$/m);
  });
});

describe("logs never carry secrets", () => {
  it("contains no token, valid or not, and no request body content", async () => {
    const { lines, post, running } = await serverWithLogs();
    const wrongToken = "wrong-token-that-must-not-be-logged";
    const secretField = "body-secret-value-42";
    await post(`{"id":5,"name":"a","password":"${secretField}"}`);
    await post(`{"id":"bad","name":"${secretField}"}`);
    await post('{"id":6,"name":"a"}', { authorization: `Bearer ${wrongToken}` });
    await rawRequest(running.url, {
      method: "GET",
      path: "/metrics",
      headers: { authorization: `Bearer ${wrongToken}` },
    });
    await running.store.close();
    await post(`{"id":7,"name":"${secretField}"}`);
    await eventually(() => lines.some((l) => l.includes('"msg":"request failed"')), { what: "the 500's error line" });
    const all = lines.join("\n");
    expect(lines.length).toBeGreaterThan(0);
    for (const secret of [TOKEN, wrongToken, secretField]) expect(all).not.toContain(secret);
  });

  it("contains no webhook secret, receiver URL token or body secret on any error path, 5xx included, even at trace level", async () => {
    const secret = `whsec_${Buffer.from("webhook-signing-secret-0123456789").toString("base64")}`;
    const bodySecret = "body-secret-on-error-paths-77";
    const wrongToken = "wrong-token-on-error-paths";
    // A receiver that fails, then asks to be left alone: both are logged as failed attempts.
    let attempts = 0;
    const receiver = createServer((_req, res) => {
      attempts++;
      res.writeHead(attempts === 1 ? 500 : 410).end();
    });
    receiver.listen(0, "127.0.0.1");
    await once(receiver, "listening");
    cleanups.push(() => new Promise<void>((r) => receiver.close(() => r())));
    const { lines, post, running, databaseUrl } = await serverWithLogs({
      logLevel: "trace",
      webhookAllowedHosts: ["127.0.0.1"],
      webhookRetryBaseMs: 10,
    });
    const hook = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook?key=receiver-url-token-99`;
    const added = spawnSync(process.execPath, [BIN, "webhooks", "add", hook, "--secret", secret], {
      env: { ...process.env, DATABASE_URL: databaseUrl, PLANTSTORE_WEBHOOK_ALLOWED_HOSTS: "127.0.0.1" },
      encoding: "utf8",
    });
    expect(added.status, added.stderr).toBe(0);
    expect((await post('{"id":20,"name":"announced"}')).status).toBe(200);
    await eventually(() => lines.filter((l) => l.includes('"msg":"webhook attempt failed"')).length >= 2, {
      what: () => `two failed delivery attempts logged (${attempts} made)`,
    });
    expect(attempts).toBe(2);

    // Every kind of refusal, each carrying the secret in the body, the path or the query.
    const refusals: Array<[number, Promise<{ status: number }>]> = [
      [400, post(`{"password":"${bodySecret}"`)],
      [400, post(`{"id":21,"name":"${bodySecret}${"x".repeat(300)}"}`)],
      [409, post(`{"id":20,"name":"${bodySecret}"}`)],
      [413, post(`{"id":22,"name":"a","password":"${bodySecret.repeat(1000)}"}`)],
      [415, post(`{"id":23,"name":"${bodySecret}"}`, { "content-type": "text/plain" })],
      [401, post(`{"id":24,"name":"${bodySecret}"}`, { authorization: `Bearer ${wrongToken}` })],
      [
        404,
        rawRequest(running.url, {
          method: "GET",
          path: `/${bodySecret}`,
          headers: { authorization: `Bearer ${TOKEN}` },
        }),
      ],
      [
        400,
        rawRequest(running.url, {
          method: "GET",
          path: `/plants?limit=${bodySecret}`,
          headers: { authorization: `Bearer ${TOKEN}` },
        }),
      ],
      [
        200,
        rawRequest(running.url, {
          method: "GET",
          path: `/plants?tag=${bodySecret}`,
          headers: { authorization: `Bearer ${TOKEN}`, "x-request-id": `${bodySecret} x` },
        }),
      ],
    ];
    for (const [status, response] of refusals) expect((await response).status).toBe(status);
    // And the 5xx path: the database goes away under a request that carries the secret.
    await running.store.close();
    expect((await post(`{"id":25,"name":"${bodySecret}","password":"${bodySecret}"}`)).status).toBe(500);
    await eventually(() => lines.some((l) => l.includes('"msg":"request failed"')), { what: "the 500's error line" });

    const all = lines.join("\n");
    expect(lines.some((l) => l.includes('"msg":"webhook attempt failed"'))).toBe(true);
    expect(lines.some((l) => l.includes('"msg":"request failed"'))).toBe(true);
    for (const leaked of [
      TOKEN,
      wrongToken,
      bodySecret,
      secret,
      secret.slice("whsec_".length),
      "receiver-url-token-99",
    ]) {
      expect(all).not.toContain(leaked);
    }
  });
});

describe("GET /metrics", () => {
  it("needs a valid token by default and counts requests, batches and commits", async () => {
    const { running, post } = await serverWithLogs();
    await post('{"id":8,"name":"a"}');
    const anonymous = await rawRequest(running.url, { method: "GET", path: "/metrics" });
    expectErrorShape(anonymous, 401, 40100);
    const response = await rawRequest(running.url, {
      method: "GET",
      path: "/metrics",
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(response.status).toBe(200);
    expect(response.headers["content-type"]).toMatch(/^text\/plain/);
    expect(response.text).toMatch(/plantstore_http_requests_total\{route="\/plants",method="POST",status="200"\} 1/);
    expect(response.text).toMatch(
      /plantstore_http_request_duration_seconds_bucket\{le="0.0005",route="\/plants",method="POST"\}/,
    );
    expect(response.text).toMatch(/plantstore_store_batch_size_count 1/);
    expect(response.text).toMatch(/plantstore_store_commit_duration_seconds_count 1/);
    expect(response.text).not.toContain(TOKEN);
  });

  it("labels unknown paths as unmatched, whatever the path", async () => {
    const { running } = await serverWithLogs({ metrics: "public" });
    await rawRequest(running.url, { method: "GET", path: "/random-scanner-path-1" });
    const response = await rawRequest(running.url, { method: "GET", path: "/metrics" });
    expect(response.status).toBe(200);
    expect(response.text).toMatch(/route="unmatched",method="GET",status="404"/);
    expect(response.text).not.toContain("random-scanner-path-1");
  });

  it("is not served when off", async () => {
    const { running } = await serverWithLogs({ metrics: "off" });
    expectErrorShape(await rawRequest(running.url, { method: "GET", path: "/metrics" }), 404, 40400);
  });

  it("moves to its own port, without a token, when PLANTSTORE_METRICS_PORT is set", async () => {
    const { running } = await serverWithLogs({ metricsPort: 0 });
    expect(running.metricsUrl).toBeDefined();
    const response = await rawRequest(running.metricsUrl!, { method: "GET", path: "/metrics" });
    expect(response.status).toBe(200);
    expect(response.text).toContain("plantstore_http_requests_total");
    expectErrorShape(
      await rawRequest(running.url, { method: "GET", path: "/metrics", headers: { authorization: `Bearer ${TOKEN}` } }),
      404,
      40400,
    );
  });
});

describe("GET /healthz and GET /readyz", () => {
  it("readyz answers 200 while the database answers and 503 (50300) when it does not", async () => {
    const { running } = await serverWithLogs();
    const ready = await rawRequest(running.url, { method: "GET", path: "/readyz" });
    expect(ready.status).toBe(200);
    expect(ready.json).toEqual({ status: "ready", migrations: { applied: 8, known: 8 } });
    await running.store.close();
    expectErrorShape(await rawRequest(running.url, { method: "GET", path: "/readyz" }), 503, 50300);
    // The process is alive all the same.
    expect((await rawRequest(running.url, { method: "GET", path: "/healthz" })).status).toBe(200);
  });
});
