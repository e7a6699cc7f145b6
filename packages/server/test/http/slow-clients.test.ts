import type { Server } from "node:http";
import { connect, type Socket } from "node:net";

import { eventually } from "@plantstore/test-support/eventually";
import { describe, expect, it } from "vitest";

import { closeIdleClientConnections } from "../support/client-connections.ts";
import { rawRequest, startTestServer, TOKEN } from "../support/harness.ts";
import { randomPlant } from "../support/load.ts";
import { openRaw, postHead, type RawClient, trickle } from "../support/raw-socket.ts";
import { startServerWithTimings } from "../support/server-with-timings.ts";

// How long past the request timeout a connection that moves no byte, or whose client takes none
// of its answers' bytes, is kept: 5 s in production, 1 s here, so each cut below waits 1 s, not 5.
const STALL_MARGIN_MS = 1_000;

const connectionCount = (server: Server) =>
  new Promise<number>((resolve, reject) => server.getConnections((e, n) => (e ? reject(e) : resolve(n))));

describe("slow and idle clients", () => {
  it("serves a slow but steady body that finishes within the request timeout", async () => {
    // The body takes about 0.7 s: longer than the headers timeout, well within the request timeout.
    await using server = await startTestServer({ headersTimeoutMs: 300, requestTimeoutMs: 2_000 });
    const client = await openRaw(server.port);
    const body = '{"id":77,"name":"patient"}';
    client.write(postHead(TOKEN, body.length, "Connection: close\r\n"));
    trickle(client, body, 25);
    await client.closed;
    expect(client.answers()).toMatchObject([{ status: 200, body: '{"name":"patient"}' }]);
  });

  it("closes a connection whose client stopped reading its answers", async () => {
    await using server = await startServerWithTimings(
      { headersTimeoutMs: 300, requestTimeoutMs: 300 },
      { stallMarginMs: STALL_MARGIN_MS },
    );
    const client = await openRaw(server.port);
    client.socket.pause();
    // Far more answer bytes than the socket buffers hold; the server must not wait forever.
    const request = "GET /openapi.json HTTP/1.1\r\nHost: plantstore\r\n\r\n";
    client.write(request.repeat(3_000));
    let open = 1;
    await eventually(async () => (open = await connectionCount(server.server)) === 0, {
      what: () => `the stalled connection to be closed (${open} open)`,
    });
    // Closed by the stall bound (the request timeout, 300 ms, plus 1 s of no progress), well before `eventually` gives up.
    client.socket.destroy();
    expect((await rawRequest(server.url, { method: "GET", path: "/healthz" })).status).toBe(200);
  });

  it("closes connections that pipeline requests and never read within the request timeout plus the stall margin", async () => {
    const requestTimeoutMs = 300;
    await using server = await startServerWithTimings(
      {
        headersTimeoutMs: requestTimeoutMs,
        requestTimeoutMs,
        maxConnections: 10,
        // On a port of its own, so the gauge can be read while the API port is full.
        metricsPort: 0,
      },
      { stallMarginMs: STALL_MARGIN_MS },
    );
    const openConnections = async () => {
      const metrics = await rawRequest(server.metricsUrl!, { method: "GET", path: "/metrics" });
      return Number(/^plantstore_http_open_connections (\d+)$/m.exec(metrics.text)?.[1]);
    };
    // Not /healthz: that is answered even past the cap.
    const served = () =>
      rawRequest(server.url, { method: "GET", path: "/readyz", headers: { connection: "close" } }).then(
        (answer) => answer.status,
        () => 0,
      );
    // Six 1.7 MB answers per connection: more than loopback's socket buffers hold, so the server's
    // writes really stall. Node parses all six at once and queues their answers behind the first.
    const pipelined = "GET /docs/swagger-ui-bundle.js HTTP/1.1\r\nHost: plantstore\r\n\r\n".repeat(6);
    // A keep-alive connection left from starting would free a slot by itself when it idles out.
    server.server.closeIdleConnections();
    let before = -1;
    await eventually(async () => (before = await connectionCount(server.server)) === 0, {
      what: () => `the earlier connections to close (${before} open)`,
      timeoutMs: 5_000,
    });
    const clients: RawClient[] = [];
    const sent = Date.now();
    for (let i = 0; i < 10; i++) {
      const client = await openRaw(server.port);
      client.socket.pause();
      client.write(pipelined);
      clients.push(client);
    }
    expect(await served()).toBe(503);
    expect(await openConnections()).toBe(10);

    const boundMs = requestTimeoutMs + STALL_MARGIN_MS;
    let status = 0;
    await eventually(async () => (status = await served()) === 200, {
      what: () => `/readyz to answer 200 again within ${boundMs} ms (it answers ${status})`,
      // The bound, plus what polling and the last check of the connections add.
      timeoutMs: boundMs + 1_000 - (Date.now() - sent),
    });
    // Every one of them is closed within the same bound (the stall check, every 130 ms here, may
    // cut them in different rounds): at most the metrics scrape's own connection is left.
    let open = -1;
    await eventually(async () => (open = await openConnections()) <= 1, {
      what: () => `every stalled connection closed within ${boundMs} ms (${open} open)`,
      timeoutMs: boundMs + 1_000 - (Date.now() - sent),
    });
    for (const client of clients) client.socket.destroy();
  });

  it("keeps serving a client that reads slowly but steadily for longer than that bound", async () => {
    const requestTimeoutMs = 300;
    // 6 answers of 1.7 MB: far more than loopback's socket buffers hold, and at the pace below
    // (about 3 MB/s) about twice the bound to read.
    const answers = 6;
    await using server = await startServerWithTimings(
      { headersTimeoutMs: requestTimeoutMs, requestTimeoutMs },
      { stallMarginMs: STALL_MARGIN_MS },
    );
    const path = "/docs/swagger-ui-bundle.js";
    const bundleBytes = Number((await rawRequest(server.url, { method: "HEAD", path })).headers["content-length"]);
    let serverSide: Socket | undefined;
    server.server.once("connection", (socket: Socket) => (serverSide = socket));
    const client = connect(server.port, "127.0.0.1");
    // A reset would end the wait below with too few bytes taken, which the expectation reports.
    client.on("error", () => undefined);
    client.pause();
    client.write(`GET ${path} HTTP/1.1\r\nHost: plantstore\r\n\r\n`.repeat(answers));
    let taken = 0;
    // At most one socket buffer's worth per tick: a few MB/s, so the server holds unsent bytes for
    // longer than the stall bound while the client keeps taking them.
    // The slow reader's pace is what this test is about.
    const reader = setInterval(() => (taken += (client.read() as Buffer | null)?.length ?? 0), 20);
    let firstPending = 0;
    let lastPending = 0;
    try {
      await eventually(
        () => {
          if ((serverSide?.writableLength ?? 0) > 0) {
            lastPending = Date.now();
            firstPending ||= lastPending;
          }
          return taken >= answers * bundleBytes || client.destroyed;
        },
        { what: () => `${answers} answers read (${taken} bytes so far)`, timeoutMs: 30_000 },
      );
    } finally {
      clearInterval(reader);
      client.destroy();
    }
    expect(taken).toBeGreaterThanOrEqual(answers * bundleBytes);
    expect(lastPending - firstPending).toBeGreaterThan(requestTimeoutMs + STALL_MARGIN_MS);
  }, 40_000);
});

describe("PLANTSTORE_MAX_CONNECTIONS", () => {
  /**
   * A server with a cap of `max` and every place taken by a raw client that sends nothing. /metrics
   * is on a port of its own, so the count can be read while the API port is full.
   */
  async function fullServer(max: number) {
    const server = await startTestServer({ maxConnections: max, metricsPort: 0 });
    const metrics = async () => (await rawRequest(server.metricsUrl!, { method: "GET", path: "/metrics" })).text;
    const open = async () => Number(/^plantstore_http_open_connections (\d+)$/m.exec(await metrics())?.[1]);
    // The harness's own keep-alive connection (it read /openapi.json) would free its place when it idles out.
    closeIdleClientConnections(server.url);
    let count = -1;
    await eventually(async () => (count = await open()) === 0, { what: () => `no connection open (${count})` });
    const held: RawClient[] = [];
    while (held.length < max) {
      held.push(await openRaw(server.port));
      await eventually(async () => (count = await open()) === held.length, {
        what: () => `the server to hold ${held.length} connections (${count})`,
      });
    }
    const close = async () => {
      for (const client of held) client.socket.destroy();
      await server.close();
    };
    return { server, held, metrics, open, [Symbol.asyncDispose]: close };
  }

  it("answers connections beyond the cap with 503 (50301) and Retry-After, and serves again once some close", async () => {
    await using full = await fullServer(20);
    const { server, held, metrics, open } = full;
    // A refused client's request is never served.
    const refused = await openRaw(server.port);
    const unserved = randomPlant();
    refused.write(postHead(TOKEN, Buffer.byteLength(unserved.body)) + unserved.body);
    await refused.closed;
    expect(await server.store.get(unserved.id)).toBeUndefined();
    const [answer] = refused.answers();
    expect(answer).toMatchObject({
      status: 503,
      headers: { "retry-after": "1", "content-type": "application/json; charset=utf-8" },
    });
    expect(JSON.parse(answer!.body)).toEqual({ error: 50301, message: expect.any(String) });
    for (const client of held.slice(0, 5)) client.socket.destroy();
    let count = -1;
    await eventually(async () => (count = await open()) <= 15, {
      what: () => `the server to see five connections close (${count} open)`,
    });
    expect(await metrics()).toMatch(/^plantstore_http_connections_refused_total 1$/m);
    const plant = randomPlant();
    const created = await rawRequest(server.url, {
      method: "POST",
      path: "/plants",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", connection: "close" },
      body: plant.body,
    });
    expect(created.status).toBe(200);
  });

  it("answers GET and HEAD /healthz beyond the cap as usual, so liveness never depends on a free place", async () => {
    await using full = await fullServer(4);
    const { server, metrics } = full;
    const exchange = async (request: string, head = false) => {
      const client = await openRaw(server.port);
      client.write(request);
      await client.closed;
      return client.answers({ head });
    };
    expect(await exchange("GET /healthz HTTP/1.1\r\nHost: plantstore\r\n\r\n")).toEqual([
      expect.objectContaining({
        status: 200,
        headers: expect.objectContaining({ "content-type": "application/json; charset=utf-8", connection: "close" }),
        body: '{"status":"ok"}',
      }),
    ]);
    expect(await exchange("HEAD /healthz?probe=1 HTTP/1.1\r\nHost: plantstore\r\n\r\n", true)).toEqual([
      expect.objectContaining({ status: 200, body: "" }),
    ]);
    // Only /healthz: readiness, the API and a request that only starts like /healthz are refused.
    for (const request of [
      "GET /readyz HTTP/1.1\r\nHost: plantstore\r\n\r\n",
      "GET /healthzz HTTP/1.1\r\nHost: plantstore\r\n\r\n",
      "POST /healthz HTTP/1.1\r\nHost: plantstore\r\nContent-Length: 0\r\n\r\n",
      `GET /plants HTTP/1.1\r\nHost: plantstore\r\nAuthorization: Bearer ${TOKEN}\r\n\r\n`,
    ]) {
      const [answer] = await exchange(request);
      expect(answer, request).toMatchObject({ status: 503, headers: { "retry-after": "1" } });
      expect(JSON.parse(answer!.body), request).toEqual({ error: 50301, message: expect.any(String) });
    }
    expect(await metrics()).toMatch(/^plantstore_http_connections_refused_total 4$/m);
  });
});
