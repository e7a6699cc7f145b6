import { readFileSync } from "node:fs";
import type { Socket } from "node:net";

import { eventually } from "@plantstore/test-support/eventually";
import koffi from "koffi";
import { afterEach, describe, expect, it } from "vitest";

import type { Config } from "../../src/config.ts";
import { openEventStream } from "../support/event-stream.ts";
import {
  expectErrorShape,
  OTHER_TOKEN,
  rawRequest,
  startTestServer,
  type TestServer,
  TOKEN,
} from "../support/harness.ts";
import { issueToken } from "../support/token-helpers.ts";

/**
 * What one token, one client address and all streams together may hold of an instance through
 * `GET /plants/events`: each stream stays open, so without caps one read-only token could take
 * every connection, and `/healthz` with them.
 */

const cleanups: Array<() => unknown> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

type Limits = Pick<
  Config["events"],
  "maxPerToken" | "maxPerAddress" | "connectionShare" | "heartbeatMs" | "bufferLimitBytes"
>;

async function server(limits: Partial<Limits>, overrides: Partial<Config> = {}): Promise<TestServer> {
  const { loadConfig } = await import("../../src/config.ts");
  const started = await startTestServer({
    ...overrides,
    events: { ...loadConfig({}).events, ...limits },
  });
  cleanups.push(() => started.close());
  return started;
}

async function stream(url: string, options: Parameters<typeof openEventStream>[1]) {
  const opened = await openEventStream(url, options);
  cleanups.push(() => opened.close());
  return opened;
}

/** A stream request that is refused: its answer, checked against the documents. */
function refusedStream(target: TestServer, token: string, headers: Record<string, string> = {}) {
  return target.send({
    method: "GET",
    path: "/plants/events",
    headers: { authorization: `Bearer ${token}`, ...headers },
  });
}

async function refusals(target: TestServer): Promise<Record<string, number>> {
  const metrics = await rawRequest(target.url, {
    method: "GET",
    path: "/metrics",
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  const found: Record<string, number> = {};
  for (const [, reason, count] of metrics.text.matchAll(
    /^plantstore_event_streams_refused_total\{reason="(\w+)"\} (\d+)$/gm,
  )) {
    found[reason!] = Number(count);
  }
  return found;
}

describe("GET /plants/events: streams per token (PLANTSTORE_EVENTS_MAX_PER_TOKEN)", () => {
  it("answers a token's stream past its cap with 429 (42901) and Retry-After, while another token streams", async () => {
    // Frequent heartbeats: a client that closes its end is seen gone at the next write to it.
    const target = await server({ maxPerToken: 2, heartbeatMs: 50 });
    const { token } = await issueToken(target.database.url, { scopes: ["plants:read"] });
    const first = await stream(target.url, { token });
    await stream(target.url, { token });
    const refused = await refusedStream(target, token);
    expectErrorShape(refused, 429, 42901);
    expect(refused.headers["retry-after"]).toBe("30");
    expect((refused.json as { message: string }).message).toMatch(/token holds as many open event streams/);
    // Another token from the same address is not affected.
    const other = await stream(target.url, { token: OTHER_TOKEN });
    expect(other.status).toBe(200);
    expect(await refusals(target)).toEqual({ token: 1 });
    // A place is given back when one of its streams ends (HEAD is answered as GET would be).
    first.close();
    const head = () =>
      target.send({ method: "HEAD", path: "/plants/events", headers: { authorization: `Bearer ${token}` } });
    await eventually(async () => (await head()).status === 200, { what: "the token's place to be given back" });
  });

  it("counts the static tokens of PLANTSTORE_TOKENS too", async () => {
    const target = await server({ maxPerToken: 1 });
    await stream(target.url, { token: TOKEN });
    expectErrorShape(await refusedStream(target, TOKEN), 429, 42901);
    await stream(target.url, { token: OTHER_TOKEN });
  });

  it("answers HEAD past the cap as GET would be, and a HEAD holds no place", async () => {
    const target = await server({ maxPerToken: 1 });
    const auth = { authorization: `Bearer ${TOKEN}` };
    expect((await target.send({ method: "HEAD", path: "/plants/events", headers: auth })).status).toBe(200);
    await stream(target.url, { token: TOKEN });
    const head = await target.send({ method: "HEAD", path: "/plants/events", headers: auth });
    expect(head.status).toBe(429);
    expect(head.headers["retry-after"]).toBe("30");
  });
});

describe("GET /plants/events: streams per client address (PLANTSTORE_EVENTS_MAX_PER_ADDRESS)", () => {
  it("answers a stream past its address's cap with 429 (42901), whatever the token, while another address streams", async () => {
    // Behind a trusted proxy (loopback), so each stream can come from an address of its own.
    const target = await server({ maxPerAddress: 2 }, { trustedProxies: ["loopback"] });
    const from = (address: string) => ({ "x-forwarded-for": address });
    const { token } = await issueToken(target.database.url, { scopes: ["plants:read"] });
    await stream(target.url, { token: TOKEN, headers: from("203.0.113.7") });
    await stream(target.url, { token: OTHER_TOKEN, headers: from("203.0.113.7") });
    const refused = await refusedStream(target, token, from("203.0.113.7"));
    expectErrorShape(refused, 429, 42901);
    expect(refused.headers["retry-after"]).toBe("30");
    expect((refused.json as { message: string }).message).toMatch(/client address holds as many open event streams/);
    await stream(target.url, { token, headers: from("203.0.113.8") });
    // An IPv6 client counts per /64: another address in it is the same client.
    await stream(target.url, { token, headers: from("2001:db8:1:2::1") });
    await stream(target.url, { token, headers: from("2001:db8:1:2::2") });
    expectErrorShape(await refusedStream(target, token, from("2001:db8:1:2:ffff::3")), 429, 42901);
    expect(await refusals(target)).toEqual({ address: 2 });
  });
});

describe("GET /plants/events: the streams' share of PLANTSTORE_MAX_CONNECTIONS (PLANTSTORE_EVENTS_CONNECTION_SHARE)", () => {
  it("answers a stream past the share with 503 (50306) and Retry-After, while ordinary requests and /healthz are answered", async () => {
    // 30% of 10 connections: three streams.
    const target = await server({ connectionShare: 30 }, { maxConnections: 10, trustedProxies: ["loopback"] });
    for (const address of ["203.0.113.1", "203.0.113.2", "203.0.113.3"]) {
      await stream(target.url, { token: TOKEN, headers: { "x-forwarded-for": address } });
    }
    const refused = await refusedStream(target, OTHER_TOKEN, { "x-forwarded-for": "203.0.113.4" });
    expectErrorShape(refused, 503, 50306);
    expect(refused.headers["retry-after"]).toBe("10");
    const auth = { authorization: `Bearer ${OTHER_TOKEN}` };
    expect((await target.send({ method: "GET", path: "/plants", headers: auth })).status).toBe(200);
    expect(
      (
        await target.send({
          method: "POST",
          path: "/plants",
          headers: { ...auth, "content-type": "application/json" },
          body: '{"id":1,"name":"Monstera"}',
        })
      ).status,
    ).toBe(200);
    expect((await target.send({ method: "GET", path: "/healthz" })).status).toBe(200);
    expect(await refusals(target)).toEqual({ capacity: 1 });
  });
});

/**
 * Caps a client socket's receive buffer (SO_RCVBUF, Linux's numbers), through koffi as the server
 * caps its send buffers. Left alone, a client that never reads lets its kernel take megabytes
 * (receive autotuning) before the server's side backs up at all: thousands of plants per stream.
 */
function shrinkReceiveBuffer(socket: Socket, bytes: number): void {
  const setsockopt = koffi
    .load(null)
    .func("int setsockopt(int fd, int level, int optname, const int *optval, uint32_t optlen)");
  const fd = (socket as Socket & { _handle: { fd: number } })._handle.fd;
  if (setsockopt(fd, 1, 8, [bytes], 4) !== 0) throw new Error("setsockopt(SO_RCVBUF) failed");
}

/**
 * The bytes the kernel holds unsent or unacknowledged (`tx_queue`) on each of the server's
 * established connections on `port`, from /proc/net/tcp: what the server's process cannot see.
 */
function serverSendQueues(port: number): number[] {
  const local = `:${port.toString(16).toUpperCase().padStart(4, "0")}`;
  return readFileSync("/proc/net/tcp", "latin1")
    .split("\n")
    .slice(1)
    .map((line) => line.trim().split(/\s+/))
    .filter((fields) => fields[1]?.endsWith(local) && fields[3] === "01")
    .map((fields) => parseInt(fields[4]!.split(":")[0]!, 16));
}

describe("GET /plants/events: what a stream holds, counting the kernel's send buffer", () => {
  it("closes 50 streams that never read as slow consumers, none holding more than PLANTSTORE_EVENTS_BUFFER_LIMIT in the kernel and the server together", async () => {
    const limit = 65_536;
    const target = await server({ bufferLimitBytes: limit, maxPerToken: 50 });
    const feeds = [];
    for (let i = 0; i < 50; i++) {
      const feed = await stream(target.url, {
        token: TOKEN,
        onConnect: (socket) => shrinkReceiveBuffer(socket, 8_192),
      });
      feed.pause();
      feeds.push(feed);
    }
    const slow = async () => {
      const metrics = await rawRequest(target.url, {
        method: "GET",
        path: "/metrics",
        headers: { authorization: `Bearer ${TOKEN}`, connection: "close" },
      });
      return Number(
        /^plantstore_event_streams_closed_total\{reason="slow_consumer"\} (\d+)$/m.exec(metrics.text)?.[1] ?? 0,
      );
    };
    // Events of about 250 bytes, 200 at a time, so each write to a stream stays below its bound
    // and a stream passes it by falling behind. Through the store itself: only the volume matters.
    const name = "n".repeat(200);
    let created = 0;
    let mostQueued = 0;
    let closed: number;
    while ((closed = await slow()) < 50 && created < 20_000) {
      const ids = Array.from({ length: 200 }, (_, i) => BigInt(created + i + 1));
      await Promise.all(ids.map((id) => target.store.create({ id, name })));
      created += ids.length;
      mostQueued = Math.max(mostQueued, ...serverSendQueues(target.port));
    }
    expect(closed, `streams closed as slow consumers after ${created} plants`).toBe(50);
    // What the kernel held for a stream is counted in its bound, so it never holds more than that.
    expect(mostQueued).toBeGreaterThan(0);
    expect(mostQueued, `the most one server socket held in the kernel`).toBeLessThanOrEqual(limit);
    // Each ends after its last whole event, once its client reads again.
    for (const feed of feeds) {
      feed.resume();
      expect(await feed.ended).toEqual({ complete: true });
    }
  });
});
