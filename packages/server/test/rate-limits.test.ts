import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { createServer, connect, type Server, type Socket } from "node:net";
import { Writable } from "node:stream";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startServer, type Config } from "../src/index.ts";
import { createLogger } from "../src/logger.ts";
import { expectErrorShape, rawRequest, startTestServer, testConfig, TOKEN, type TestResponse } from "./harness.ts";
import { createTestDatabase, type TestDatabase } from "./test-database.ts";
import { databaseUrlOf, issueToken, startServerProcess, type ServerProcess } from "./token-helpers.ts";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const get = (url: string, token?: string) =>
  rawRequest(url, { method: "GET", path: "/plants", headers: token === undefined ? {} : { authorization: `Bearer ${token}` } });

function expectRateLimited(response: TestResponse, policy: string, quota: number, window: number): number {
  expectErrorShape(response, 429, 42900);
  const retryAfter = Number(response.headers["retry-after"]);
  expect(Number.isInteger(retryAfter)).toBe(true);
  expect(retryAfter).toBeGreaterThanOrEqual(1);
  expect(retryAfter).toBeLessThanOrEqual(window);
  expect(response.headers["ratelimit-policy"]).toBe(`"${policy}";q=${quota};w=${window}`);
  const field = String(response.headers["ratelimit"]);
  expect(field).toMatch(new RegExp(`^"${policy}";r=0;t=\\d+$`));
  // Retry-After never points earlier than the announced reset (draft-ietf-httpapi-ratelimit-headers §6).
  expect(retryAfter).toBeGreaterThanOrEqual(Number(/t=(\d+)/.exec(field)![1]));
  return retryAfter;
}

describe("the per-token limit", () => {
  it("announces the policy on every answer, refuses with 429 once spent, and recovers after the window", async () => {
    await using server = await startTestServer({
      rateLimits: { token: { name: "token", points: 3, windowSec: 2 }, authFailures: null },
    });
    const { token } = await issueToken(databaseUrlOf(server));
    const send = () => server.send({ method: "GET", path: "/plants", headers: { authorization: `Bearer ${token}` } });
    for (const remaining of [2, 1, 0]) {
      const ok = await send();
      expect(ok.status).toBe(200);
      expect(ok.headers["ratelimit-policy"]).toBe('"token";q=3;w=2');
      expect(ok.headers["ratelimit"]).toMatch(new RegExp(`^"token";r=${remaining};t=[0-2]$`));
    }
    const refused = await send();
    const retryAfter = expectRateLimited(refused, "token", 3, 2);
    // Another token has its own allowance; the operator's PLANTSTORE_TOKENS are not limited.
    expect((await send()).status).toBe(429);
    const other = await issueToken(databaseUrlOf(server));
    expect((await get(server.url, other.token)).status).toBe(200);
    for (let i = 0; i < 5; i++) expect((await get(server.url, TOKEN)).status).toBe(200);

    const metrics = await rawRequest(server.url, { method: "GET", path: "/metrics", headers: { authorization: `Bearer ${TOKEN}` } });
    expect(metrics.text).toMatch(/plantstore_rate_limited_total\{reason="token"\} 2/);

    await sleep(retryAfter * 1000 + 100);
    const again = await send();
    expect(again.status).toBe(200);
    expect(again.headers["ratelimit"]).toMatch(/^"token";r=2;t=[0-2]$/);
  });

  it("is off with PLANTSTORE_RATE_LIMIT_TOKEN=off: no 429 and no RateLimit fields", async () => {
    await using server = await startTestServer({ rateLimits: { token: null, authFailures: null } });
    const { token } = await issueToken(databaseUrlOf(server));
    for (let i = 0; i < 5; i++) {
      const response = await get(server.url, token);
      expect(response.status).toBe(200);
      expect(response.headers["ratelimit"]).toBeUndefined();
    }
  });
});

describe("the failed-authentication limit per client address", () => {
  it("refuses an address's wrong tokens with 429 once over it, until the window ends; valid tokens are still served", async () => {
    await using server = await startTestServer({
      rateLimits: { token: null, authFailures: { name: "auth-failures", points: 3, windowSec: 2 } },
    });
    const { token } = await issueToken(databaseUrlOf(server));
    for (let i = 0; i < 3; i++) expectErrorShape(await get(server.url, `wrong-${i}`), 401, 40101);
    const refused = await server.send({ method: "GET", path: "/plants", headers: { authorization: "Bearer wrong-4" } });
    const retryAfter = expectRateLimited(refused, "auth-failures", 3, 2);
    // While blocked, a wrong token gets 429 and a valid one is served: one guesser behind a shared
    // address must not lock its honest neighbours out (issue 17).
    expectRateLimited(await get(server.url, "wrong-5"), "auth-failures", 3, 2);
    expect((await get(server.url, token)).status).toBe(200);
    // Missing tokens are not guesses: still the plain 401.
    expectErrorShape(await get(server.url), 401, 40100);
    const metrics = await rawRequest(server.url, { method: "GET", path: "/metrics", headers: { authorization: `Bearer ${TOKEN}` } });
    expect(metrics.status).toBe(200);
    expect(metrics.text).toMatch(/plantstore_rate_limited_total\{reason="auth_failures"\} 2/);

    await sleep(retryAfter * 1000 + 100);
    expect((await get(server.url, token)).status).toBe(200);
    expectErrorShape(await get(server.url, "wrong-6"), 401, 40101);
  });
});

/** GET /plants as relayed by a proxy on 127.0.0.1 that sent this X-Forwarded-For (none when undefined). */
const getVia = (url: string, forwardedFor: string | undefined, token?: string) =>
  rawRequest(url, {
    method: "GET",
    path: "/plants",
    headers: {
      ...(forwardedFor === undefined ? {} : { "x-forwarded-for": forwardedFor }),
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
    },
  });

describe("the failed-authentication limit behind a trusted proxy (PLANTSTORE_TRUSTED_PROXIES)", () => {
  const authFailures = { name: "auth-failures", points: 3, windowSec: 60 };

  it("limits each X-Forwarded-For client separately: A's guesses are locked out, B's are not, valid tokens never", async () => {
    await using server = await startTestServer({ trustedProxies: ["127.0.0.1"], rateLimits: { token: null, authFailures } });
    const { token } = await issueToken(databaseUrlOf(server));
    const [a, b] = ["203.0.113.7", "198.51.100.9"];
    for (let i = 0; i < 3; i++) expectErrorShape(await getVia(server.url, a, `wrong-${i}`), 401, 40101);
    expectRateLimited(await getVia(server.url, a, "wrong-4"), "auth-failures", 3, 60);
    expectRateLimited(await getVia(server.url, a, "wrong-5"), "auth-failures", 3, 60);
    expect((await getVia(server.url, a, token)).status).toBe(200);

    expectErrorShape(await getVia(server.url, b, "wrong-b"), 401, 40101);
    expect((await getVia(server.url, b, token)).status).toBe(200);
    // The proxy's own address (a request without the header) is a client of its own too.
    expect((await getVia(server.url, undefined, token)).status).toBe(200);
    expectErrorShape(await getVia(server.url, undefined, "wrong-proxy"), 401, 40101);
  });

  it("keys on the proxy's entry, not a spoofed one the client put left of it (`spoof, real`)", async () => {
    await using server = await startTestServer({ trustedProxies: ["127.0.0.1"], rateLimits: { token: null, authFailures } });
    const { token } = await issueToken(databaseUrlOf(server));
    const real = "203.0.113.7";
    // A new spoofed entry on every guess buys no new allowance.
    for (let i = 0; i < 3; i++) expectErrorShape(await getVia(server.url, `198.51.100.${i}, ${real}`, `wrong-${i}`), 401, 40101);
    expectRateLimited(await getVia(server.url, `198.51.100.99, ${real}`, "wrong-4"), "auth-failures", 3, 60);
    expectRateLimited(await getVia(server.url, real, "wrong-5"), "auth-failures", 3, 60);
    expect((await getVia(server.url, real, token)).status).toBe(200);
    // The addresses it spoofed were never charged.
    expect((await getVia(server.url, "198.51.100.0", token)).status).toBe(200);
    expect((await getVia(server.url, `${real}, 198.51.100.1`, token)).status).toBe(200);
    expectErrorShape(await getVia(server.url, "198.51.100.0", "wrong-6"), 401, 40101);
    expectErrorShape(await getVia(server.url, `${real}, 198.51.100.1`, "wrong-7"), 401, 40101);
  });

  it("walks past every trusted hop: behind two proxies, the client left of the inner one is keyed", async () => {
    await using server = await startTestServer({
      trustedProxies: ["127.0.0.1", "10.0.0.0/8"],
      rateLimits: { token: null, authFailures },
    });
    const { token } = await issueToken(databaseUrlOf(server));
    for (let i = 0; i < 3; i++) expectErrorShape(await getVia(server.url, `198.51.100.${i}, 203.0.113.7, 10.0.0.${i + 1}`, `wrong-${i}`), 401, 40101);
    expectRateLimited(await getVia(server.url, "203.0.113.7, 10.0.0.9", "wrong-4"), "auth-failures", 3, 60);
    expectRateLimited(await getVia(server.url, "203.0.113.7", "wrong-5"), "auth-failures", 3, 60);
    expect((await getVia(server.url, "203.0.113.7", token)).status).toBe(200);
    expect((await getVia(server.url, "203.0.113.8, 10.0.0.1", token)).status).toBe(200);
    expectErrorShape(await getVia(server.url, "203.0.113.8, 10.0.0.1", "wrong-6"), 401, 40101);
  });

  for (const [title, trustedProxies] of [
    ["by default (nobody trusted)", []],
    ["when the peer is not among the trusted proxies", ["10.0.0.0/8"]],
  ] as const) {
    it(`ignores X-Forwarded-For ${title}: every guess counts against the TCP peer`, async () => {
      await using server = await startTestServer({ trustedProxies: [...trustedProxies], rateLimits: { token: null, authFailures } });
      const { token } = await issueToken(databaseUrlOf(server));
      for (let i = 0; i < 3; i++) expectErrorShape(await getVia(server.url, `198.51.100.${i}`, `wrong-${i}`), 401, 40101);
      expectRateLimited(await getVia(server.url, "198.51.100.99", "wrong-4"), "auth-failures", 3, 60);
      expectRateLimited(await getVia(server.url, undefined, "wrong-5"), "auth-failures", 3, 60);
      expectRateLimited(await getVia(server.url, "203.0.113.7", "wrong-6"), "auth-failures", 3, 60);
      expect((await getVia(server.url, undefined, token)).status).toBe(200);
      expect((await getVia(server.url, "203.0.113.7", token)).status).toBe(200);
    });
  }
});

describe("rate limits when Redis is down (fail open to per-instance counts)", () => {
  it("keeps serving, still limits within this instance, and says so in the log and the metrics", async () => {
    await using database = await createTestDatabase();
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(...chunk.toString("utf8").split("\n").filter((l) => l.length > 0));
        done();
      },
    });
    const overrides: Partial<Config> = {
      logLevel: "info",
      // Nothing listens on port 1.
      redisUrl: "redis://127.0.0.1:1",
      rateLimits: { token: { name: "token", points: 2, windowSec: 60 }, authFailures: null },
    };
    const running = await startServer({ config: testConfig(database.url, overrides), logger: createLogger("info", sink) });
    try {
      const { token } = await issueToken(database.url);
      expect((await get(running.url, token)).status).toBe(200);
      expect((await get(running.url, token)).status).toBe(200);
      expectRateLimited(await get(running.url, token), "token", 2, 60);
      const metrics = await rawRequest(running.url, { method: "GET", path: "/metrics", headers: { authorization: `Bearer ${TOKEN}` } });
      expect(metrics.text).toMatch(/plantstore_rate_limit_fallbacks_total [1-9]/);
      await sleep(50);
      const warnings = lines.map((l) => JSON.parse(l) as { level: number; msg: string }).filter((l) => l.level === 40);
      expect(warnings.some((l) => /Redis/.test(l.msg))).toBe(true);
    } finally {
      await running.close();
    }
  });
});

/**
 * Two server processes sharing one SQLite file and the real Redis at REDIS_URL (default
 * 127.0.0.1:6379). Not reachable is a failure, not a skip: CI has Redis.
 */
describe("the per-token limit shared through Redis by two server processes", () => {
  const redisUrl = process.env["REDIS_URL"] ?? "redis://127.0.0.1:6379";
  const prefix = `plantstore-test:${randomUUID()}:`;
  let redis: Redis;
  let database: TestDatabase;
  const servers: ServerProcess[] = [];

  beforeAll(async () => {
    redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 5_000 });
    await redis.connect();
    expect(await redis.ping()).toBe("PONG");
    database = await createTestDatabase();
  });
  afterAll(async () => {
    for (const server of servers) await server.stop();
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
    await database?.dispose();
  });

  it("survives Redis going away mid-flight (per-instance counts meanwhile) and shares again once it is back", async () => {
    // A TCP relay to the real Redis that the test can cut and restore.
    const target = new URL(redisUrl);
    const sockets = new Set<Socket>();
    const relay = (): Server =>
      createServer((client) => {
        const upstream = connect(Number(target.port || 6379), target.hostname);
        for (const s of [client, upstream]) {
          sockets.add(s);
          s.on("error", () => s.destroy());
          s.on("close", () => sockets.delete(s));
        }
        client.pipe(upstream).pipe(client);
      });
    let proxy = relay().listen(0, "127.0.0.1");
    await once(proxy, "listening");
    const port = (proxy.address() as { port: number }).port;
    const ownPrefix = `${prefix}relay:`;
    await using server = await startTestServer({
      redisUrl: `redis://127.0.0.1:${port}`,
      redisPrefix: ownPrefix,
      rateLimits: { token: { name: "token", points: 100, windowSec: 60 }, authFailures: null },
    });
    const { id, token } = await issueToken(databaseUrlOf(server));
    const key = `${ownPrefix}token:opaque:${id}`;
    try {
      expect((await get(server.url, token)).headers["ratelimit"]).toMatch(/r=99;/);
      expect(await redis.get(key)).toBe("1");

      proxy.close();
      for (const s of sockets) s.destroy();
      await sleep(100);
      const started = Date.now();
      const during = await get(server.url, token);
      expect(during.status).toBe(200);
      expect(Date.now() - started).toBeLessThan(1_500);
      expect(await redis.get(key)).toBe("1");

      proxy = relay().listen(port, "127.0.0.1");
      await once(proxy, "listening");
      let shared = false;
      for (let i = 0; i < 60 && !shared; i++) {
        await sleep(100);
        expect((await get(server.url, token)).status).toBe(200);
        shared = Number(await redis.get(key)) > 1;
      }
      expect(shared).toBe(true);
    } finally {
      proxy.close();
      for (const s of sockets) s.destroy();
    }
  });

  it("counts one allowance across both: the sixth request of five, on either process, gets 429", async () => {
    const env = {
      DATABASE_URL: database.url,
      PLANTSTORE_TOKENS: "",
      REDIS_URL: redisUrl,
      PLANTSTORE_REDIS_PREFIX: prefix,
      PLANTSTORE_RATE_LIMIT_TOKEN: "5/60s",
    };
    servers.push(await startServerProcess(env));
    servers.push(await startServerProcess(env));
    const [a, b] = servers as [ServerProcess, ServerProcess];
    const { token } = await issueToken(env.DATABASE_URL);
    const remaining: string[] = [];
    for (const server of [a, b, a, b, a]) {
      const response = await get(server.url, token);
      expect(response.status).toBe(200);
      remaining.push(String(response.headers["ratelimit"]).split(";")[1]!);
    }
    // One counter: each process sees the other's requests.
    expect(remaining).toEqual(["r=4", "r=3", "r=2", "r=1", "r=0"]);
    expectRateLimited(await get(b.url, token), "token", 5, 60);
    expectRateLimited(await get(a.url, token), "token", 5, 60);
    expect((await redis.keys(`${prefix}*`)).length).toBeGreaterThan(0);
    for (const server of servers) expect(server.output()).not.toContain(token);
  });
});
