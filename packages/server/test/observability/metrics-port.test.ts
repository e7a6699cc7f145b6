import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

import { Gauge } from "prom-client";
import { describe, expect, it } from "vitest";

import { createMetricsApp } from "../../src/http/metrics-app.ts";
import { createLogger } from "../../src/logger.ts";
import { createMetrics } from "../../src/metrics.ts";
import { expectErrorShape, logLines, rawRequest, startTestServer, type TestResponse } from "../support/harness.ts";

const ONLY_METRICS = { error: 40400, message: "only /metrics is served on this port" };

function expectOnlyMetrics(response: TestResponse): void {
  expectErrorShape(response, 404, 40400);
  expect(response.json).toEqual(ONLY_METRICS);
}

describe("the metrics port (PLANTSTORE_METRICS_PORT)", () => {
  it("answers GET /metrics without a token, and 404 with the catalogue's Error body to anything else", async () => {
    await using server = await startTestServer({ metricsPort: 0 });
    const metricsUrl = server.metricsUrl!;
    const scrape = await rawRequest(metricsUrl, { method: "GET", path: "/metrics" });
    expect(scrape.status).toBe(200);
    expect(scrape.headers["content-type"]).toMatch(/^text\/plain/);
    expect(scrape.text).toContain("plantstore_http_requests_total");
    // Matched on the path, as on the main port: a query string does not change what is served.
    expect((await rawRequest(metricsUrl, { method: "GET", path: "/metrics?name[]=up" })).status).toBe(200);

    // Paths the API does not declare either (the answers are checked against its document too).
    expectOnlyMetrics(await rawRequest(metricsUrl, { method: "GET", path: "/" }));
    expectOnlyMetrics(await rawRequest(metricsUrl, { method: "GET", path: "/healthz-not" }));
    expectOnlyMetrics(await rawRequest(metricsUrl, { method: "GET", path: "/metrics/" }));
    // GET alone, as this port has always answered: no 405 for another method, no HEAD.
    expectOnlyMetrics(await rawRequest(metricsUrl, { method: "POST", path: "/metrics", body: "{}" }));
    expectOnlyMetrics(await rawRequest(metricsUrl, { method: "DELETE", path: "/metrics" }));
    expect((await rawRequest(metricsUrl, { method: "HEAD", path: "/metrics" })).status).toBe(404);
  });

  it("answers a scrape whose collection fails with 500 and the catalogue's INTERNAL body, and logs why", async () => {
    const metrics = createMetrics();
    new Gauge({
      name: "plantstore_test_broken",
      help: "A collector that fails, as a source that cannot be read would.",
      registers: [metrics.registry],
      collect() {
        throw new Error("the source of this gauge is gone");
      },
    });
    const { lines, sink } = logLines();
    const handle = createMetricsApp(metrics, createLogger("info", sink)).callback();
    const server: Server = createServer((request, response) => void handle(request, response));
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const response = await rawRequest(url, { method: "GET", path: "/metrics" });
      expectErrorShape(response, 500, 50000);
      expect(response.json).toEqual({ error: 50000, message: "internal server error" });
      expect(response.text).not.toContain("gone");
      expect(lines.some((line) => line.includes("the source of this gauge is gone"))).toBe(true);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
