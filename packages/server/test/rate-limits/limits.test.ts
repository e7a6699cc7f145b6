import { randomUUID } from "node:crypto";
import { once } from "node:events";
import { globalAgent } from "node:http";
import { connect, createServer, type Server, type Socket } from "node:net";

import { eventually } from "@plantstore/test-support/eventually";
import { Redis } from "ioredis";
import { exportJWK, generateKeyPair, type JWTPayload, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { type Clock, type Config, startServer } from "../../src/index.ts";
import { createLogger } from "../../src/logger.ts";
import { openStore } from "../../src/storage/open-store.ts";
import {
  expectErrorShape,
  logLines,
  rawRequest,
  startTestServer,
  testConfig,
  type TestResponse,
  TOKEN,
} from "../support/harness.ts";
import { type ServerProcess, startServerProcess } from "../support/processes.ts";
import { SkippableClock } from "../support/skippable-clock.ts";
import { createTestDatabase, type TestDatabase } from "../support/test-database.ts";
import { databaseUrlOf, issueToken, startJwksServer, tampered } from "../support/token-helpers.ts";

const get = (url: string, token?: string) =>
  rawRequest(url, {
    method: "GET",
    path: "/plants",
    headers: token === undefined ? {} : { authorization: `Bearer ${token}` },
  });

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
    const clock = new SkippableClock();
    await using server = await startTestServer(
      { rateLimits: { token: { name: "token", points: 3, windowSec: 2 }, authFailures: null } },
      { clock },
    );
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

    const metrics = await rawRequest(server.url, {
      method: "GET",
      path: "/metrics",
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(metrics.text).toMatch(/plantstore_rate_limited_total\{reason="token"\} 2/);

    await clock.skip(retryAfter * 1000);
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

describe("the per-token limit for JWTs, per subject", () => {
  it('counts sub "123" in its own bucket; a numeric sub 123 is not a valid token, so it cannot share it (issue 23)', async () => {
    const secret = "a-shared-hmac-secret-of-32-characters-or-more";
    await using server = await startTestServer({
      jwt: { issuer: ISSUER, audience: AUDIENCE, keys: { secret }, clockSkewSec: 30 },
      rateLimits: { token: { name: "token", points: 2, windowSec: 60 }, authFailures: null },
    });
    const hs256 = (payload: JWTPayload) =>
      new SignJWT(payload).setProtectedHeader({ alg: "HS256" }).sign(new TextEncoder().encode(secret));
    const text = await hs256(claims({ sub: "123" }));
    expect((await get(server.url, text)).status).toBe(200);
    expect((await get(server.url, text)).status).toBe(200);
    expectRateLimited(await get(server.url, text), "token", 2, 60);
    expectErrorShape(await get(server.url, await hs256(claims({ sub: 123 as unknown as string }))), 401, 40101);
    expect((await get(server.url, await hs256(claims({ sub: "1234" })))).status).toBe(200);
  });
});

describe("the failed-authentication limit per client address", () => {
  it("refuses an address's wrong tokens with 429 once over it, until the window ends; valid tokens are still served", async () => {
    const clock = new SkippableClock();
    await using server = await startTestServer(
      { rateLimits: { token: null, authFailures: { name: "auth-failures", points: 3, windowSec: 2 } } },
      { clock },
    );
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
    const metrics = await rawRequest(server.url, {
      method: "GET",
      path: "/metrics",
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(metrics.status).toBe(200);
    expect(metrics.text).toMatch(/plantstore_rate_limited_total\{reason="auth_failures"\} 2/);

    await clock.skip(retryAfter * 1000);
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
    await using server = await startTestServer({
      trustedProxies: ["127.0.0.1"],
      rateLimits: { token: null, authFailures },
    });
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
    await using server = await startTestServer({
      trustedProxies: ["127.0.0.1"],
      rateLimits: { token: null, authFailures },
    });
    const { token } = await issueToken(databaseUrlOf(server));
    const real = "203.0.113.7";
    // A new spoofed entry on every guess buys no new allowance.
    for (let i = 0; i < 3; i++)
      expectErrorShape(await getVia(server.url, `198.51.100.${i}, ${real}`, `wrong-${i}`), 401, 40101);
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
    for (let i = 0; i < 3; i++)
      expectErrorShape(
        await getVia(server.url, `198.51.100.${i}, 203.0.113.7, 10.0.0.${i + 1}`, `wrong-${i}`),
        401,
        40101,
      );
    expectRateLimited(await getVia(server.url, "203.0.113.7, 10.0.0.9", "wrong-4"), "auth-failures", 3, 60);
    expectRateLimited(await getVia(server.url, "203.0.113.7", "wrong-5"), "auth-failures", 3, 60);
    expect((await getVia(server.url, "203.0.113.7", token)).status).toBe(200);
    expect((await getVia(server.url, "203.0.113.8, 10.0.0.1", token)).status).toBe(200);
    expectErrorShape(await getVia(server.url, "203.0.113.8, 10.0.0.1", "wrong-6"), 401, 40101);
  });

  it("counts every spelling of one IPv4 address as one client (issue 23)", async () => {
    await using server = await startTestServer({
      trustedProxies: ["127.0.0.1"],
      rateLimits: { token: null, authFailures },
    });
    const { token } = await issueToken(databaseUrlOf(server));
    const spellings = ["10.7.7.7", "::ffff:10.7.7.7", "::ffff:a07:707", "0:0:0:0:0:ffff:10.7.7.7"];
    for (let i = 0; i < 3; i++) expectErrorShape(await getVia(server.url, spellings[i], `wrong-${i}`), 401, 40101);
    for (const spelling of spellings) {
      expectRateLimited(await getVia(server.url, spelling, "wrong-4"), "auth-failures", 3, 60);
      expect((await getVia(server.url, spelling, token)).status).toBe(200);
    }
    expectErrorShape(await getVia(server.url, "10.7.7.8", "wrong-5"), 401, 40101);
  });

  it("counts IPv6 clients per /64: 30 addresses in one /64 reach 429, another /64 does not (issue 23)", async () => {
    await using server = await startTestServer({
      trustedProxies: ["127.0.0.1"],
      rateLimits: { token: null, authFailures: { name: "auth-failures", points: 20, windowSec: 60 } },
    });
    const statuses: number[] = [];
    for (let i = 1; i <= 30; i++)
      statuses.push((await getVia(server.url, `2001:db8:1:2::${i.toString(16)}`, `wrong-${i}`)).status);
    expect(statuses).toEqual([...Array<number>(20).fill(401), ...Array<number>(10).fill(429)]);
    expectRateLimited(await getVia(server.url, "2001:db8:1:2:abcd:ef01:2345:6789", "wrong"), "auth-failures", 20, 60);
    expectErrorShape(await getVia(server.url, "2001:db8:1:3::1", "wrong"), 401, 40101);
  });

  for (const [title, trustedProxies] of [
    ["by default (nobody trusted)", []],
    ["when the peer is not among the trusted proxies", ["10.0.0.0/8"]],
  ] as const) {
    it(`ignores X-Forwarded-For ${title}: every guess counts against the TCP peer`, async () => {
      await using server = await startTestServer({
        trustedProxies: [...trustedProxies],
        rateLimits: { token: null, authFailures },
      });
      const { token } = await issueToken(databaseUrlOf(server));
      for (let i = 0; i < 3; i++)
        expectErrorShape(await getVia(server.url, `198.51.100.${i}`, `wrong-${i}`), 401, 40101);
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
    const { lines, sink } = logLines();
    const overrides: Partial<Config> = {
      logLevel: "info",
      // Nothing listens on port 1.
      redisUrl: "redis://127.0.0.1:1",
      rateLimits: { token: { name: "token", points: 2, windowSec: 60 }, authFailures: null },
    };
    const running = await startServer({
      config: testConfig(database.url, overrides),
      logger: createLogger("info", sink),
    });
    try {
      const { token } = await issueToken(database.url);
      expect((await get(running.url, token)).status).toBe(200);
      expect((await get(running.url, token)).status).toBe(200);
      expectRateLimited(await get(running.url, token), "token", 2, 60);
      const metrics = await rawRequest(running.url, {
        method: "GET",
        path: "/metrics",
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect(metrics.text).toMatch(/plantstore_rate_limit_fallbacks_total [1-9]/);
      // The log is written asynchronously: the warning is there once the log has caught up.
      await eventually(
        () =>
          lines
            .map((l) => JSON.parse(l) as { level: number; msg: string })
            .some((l) => l.level === 40 && /Redis/.test(l.msg)),
        { what: "a warning naming Redis in the log", timeoutMs: 2_000 },
      );
    } finally {
      // Done with it as a client: its idle keep-alive connections would hold the stop for its grace.
      globalAgent.destroy();
      await running.close();
    }
  });
});

/**
 * Two `plantstore-server serve` processes on one database, started side by side once it is
 * migrated (as `plantstore-server migrate` would), so that they do not race to migrate it.
 */
async function startTwoProcesses(env: Record<string, string>): Promise<ServerProcess[]> {
  await (await openStore(env["DATABASE_URL"]!)).close();
  return Promise.all([startServerProcess(env), startServerProcess(env)]);
}

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
    await Promise.all(servers.map((server) => server.stop()));
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
      // Until both ends of the relay are closed, so the server's Redis connection is gone.
      await eventually(() => sockets.size === 0, { what: "the relay's connections closed" });
      const started = Date.now();
      const during = await get(server.url, token);
      expect(during.status).toBe(200);
      expect(Date.now() - started).toBeLessThan(1_500);
      expect(await redis.get(key)).toBe("1");

      proxy = relay().listen(port, "127.0.0.1");
      await once(proxy, "listening");
      await eventually(
        async () => {
          expect((await get(server.url, token)).status).toBe(200);
          return Number(await redis.get(key)) > 1;
        },
        { what: "the count shared in Redis again once it is back", timeoutMs: 6_000, intervalMs: 100 },
      );
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
    servers.push(...(await startTwoProcesses(env)));
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

const ISSUER = "https://idp.example.test/";
const AUDIENCE = "plantstore";
const claims = (overrides: JWTPayload = {}): JWTPayload => ({
  iss: ISSUER,
  aud: AUDIENCE,
  sub: "client-42",
  scope: "plants:read",
  exp: Math.floor(Date.now() / 1000) + 600,
  ...overrides,
});

describe("valid tokens from an address over its failed-authentication limit (issue 17)", () => {
  it("are served (static, issued, JWT); wrong ones get 429 without a signature check each, and 401 again after the window", async () => {
    const signer = await generateKeyPair("RS256", { extractable: true });
    const stranger = await generateKeyPair("RS256");
    const jwks = await startJwksServer([
      { ...(await exportJWK(signer.publicKey)), kid: "k1", alg: "RS256", use: "sig" },
    ]);
    const sign = (payload: JWTPayload, key = signer.privateKey, kid = "k1") =>
      new SignJWT(payload).setProtectedHeader({ alg: "RS256", kid }).sign(key);
    // window / points = 1 s: the pace of full checks a blocked address gets.
    const authFailures = { name: "auth-failures", points: 5, windowSec: 5 };
    const clock = new SkippableClock();
    try {
      await using server = await startTestServer(
        {
          // cooldownMs 0: every token naming an unknown `kid` fetches the key set again, so fetches count checks.
          jwt: {
            issuer: ISSUER,
            audience: AUDIENCE,
            keys: { jwksUrl: jwks.url, cooldownMs: 0, maxAgeMs: 60_000 },
            clockSkewSec: 30,
          },
          rateLimits: { token: { name: "token", points: 100, windowSec: 60 }, authFailures },
        },
        { clock },
      );
      const issued = await issueToken(databaseUrlOf(server));
      // Until the server has seen the new token (its cache is dropped at every token change), as a
      // caller would find it: the issued token is first used from the blocked address, and stays
      // cached. A second on the server's clock: its token poll has run, or its cache is overdue.
      await clock.skip(1_000);
      const jwt = await sign(claims());

      for (let i = 0; i < 5; i++) expectErrorShape(await get(server.url, `wrong-${i}`), 401, 40101);
      expectRateLimited(await get(server.url, "wrong-5"), "auth-failures", 5, 5);

      // Neither the issued token nor the JWT was seen before: each gets a full check, and then is remembered.
      for (let round = 0; round < 2; round++) {
        const asStatic = await get(server.url, TOKEN);
        expect(asStatic.status).toBe(200);
        expect(asStatic.headers["ratelimit"]).toBeUndefined();
        for (const token of [issued.token, jwt]) {
          const served = await get(server.url, token);
          expect(served.status).toBe(200);
          // Still under its own per-token limit.
          expect(served.headers["ratelimit"]).toMatch(new RegExp(`^"token";r=${99 - round};t=\\d+$`));
        }
      }

      // Wrong tokens of every shape: 429, never 401, while the window lasts.
      const wrong = [
        "wrong-6",
        tampered(issued.token),
        `ps_${"0".repeat(16)}_${"A".repeat(43)}`,
        await sign(claims({ exp: Math.floor(Date.now() / 1000) - 3600 })),
        await sign(claims({ aud: "someone-else" })),
        await sign(claims(), stranger.privateKey),
      ];
      for (const token of wrong) expectRateLimited(await get(server.url, token), "auth-failures", 5, 5);

      // A flood of well-formed JWTs under a key the server does not know: unblocked, each would fetch
      // the key set; blocked, at most one check a second runs, the rest are refused from memory.
      const fetched = jwks.fetches();
      const started = Date.now();
      let retryAfter = 0;
      for (let i = 0; i < 20; i++) {
        retryAfter = expectRateLimited(
          await get(server.url, await sign(claims({ jti: `flood-${i}` }), stranger.privateKey, "k-unknown")),
          "auth-failures",
          5,
          5,
        );
      }
      expect(jwks.fetches() - fetched).toBeLessThanOrEqual(1 + Math.floor((Date.now() - started) / 1000));
      // Tokens already verified are still served at once in the middle of the flood.
      for (const token of [TOKEN, issued.token, jwt]) expect((await get(server.url, token)).status).toBe(200);

      await clock.skip(retryAfter * 1000);
      // A new window, a new allowance (of five failures).
      for (const token of [wrong[0]!, wrong[1]!, wrong[3]!, wrong[5]!])
        expectErrorShape(await get(server.url, token), 401, 40101);
      for (const token of [TOKEN, issued.token, jwt]) expect((await get(server.url, token)).status).toBe(200);
    } finally {
      jwks.close();
    }
  });
});

/**
 * The wall clock, plus time the test makes pass as a stalled process sees it: `stall(ms)` moves the
 * clock on at once while the timers that fall due wait, as they would behind a busy event loop,
 * until `resume()`.
 */
class StallableClock implements Clock {
  #stalledMs = 0;
  #held: Array<() => unknown> | undefined;

  now(): number {
    return Date.now() + this.#stalledMs;
  }

  setTimer(callback: () => unknown, ms: number): () => void {
    let cancelled = false;
    const run = () => {
      if (!cancelled) void callback();
    };
    // eslint-disable-next-line no-restricted-syntax -- a clock's own timer, which the test can hold back
    const timer = setTimeout(() => (this.#held === undefined ? run() : this.#held.push(run)), ms);
    timer.unref();
    return () => {
      cancelled = true;
      clearTimeout(timer);
    };
  }

  stall(ms: number): void {
    this.#stalledMs += ms;
    this.#held ??= [];
  }

  resume(): void {
    const held = this.#held ?? [];
    this.#held = undefined;
    for (const callback of held) void callback();
  }
}

describe("a valid issued token from a blocked address when the token cache is overdue for its change check", () => {
  it("is served after the change check every request shares, not sent to the address's one full check", async () => {
    const clock = new StallableClock();
    await using server = await startTestServer(
      { rateLimits: { token: null, authFailures: { name: "auth-failures", points: 2, windowSec: 10 } } },
      { clock },
    );
    const issued = await issueToken(databaseUrlOf(server));
    expect((await get(server.url, issued.token)).status).toBe(200);
    for (let i = 0; i < 2; i++) expectErrorShape(await get(server.url, `wrong-${i}`), 401, 40101);
    expectRateLimited(await get(server.url, "wrong-2"), "auth-failures", 2, 10);
    // A token id that does not exist is refused (it would once have taken the address's full check)...
    expectRateLimited(await get(server.url, `ps_${"0".repeat(16)}_${"A".repeat(43)}`), "auth-failures", 2, 10);
    // ...and the server stalls past the 750 ms its token cache is trusted without a change check:
    // its clock moves on a second while its timers (the token poll) wait, so the request finds
    // the cache overdue, on either backend.
    clock.stall(1_000);
    expect((await get(server.url, issued.token)).status).toBe(200);
    clock.resume();
  });
});

/** Two server processes sharing one database and the real Redis, as in the per-token test above. */
describe("valid tokens from a blocked address, two server processes sharing Redis (issue 17)", () => {
  it("serves valid static, issued and JWT tokens on both; a wrong token gets 429 on both, then 401 after the window", async () => {
    const redisUrl = process.env["REDIS_URL"] ?? "redis://127.0.0.1:6379";
    const prefix = `plantstore-test:${randomUUID()}:`;
    const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 5_000 });
    await redis.connect();
    await using database = await createTestDatabase();
    const secret = "a-shared-hmac-secret-of-32-characters-or-more";
    const staticToken = `static-${randomUUID()}`;
    const env = {
      DATABASE_URL: database.url,
      PLANTSTORE_TOKENS: staticToken,
      REDIS_URL: redisUrl,
      PLANTSTORE_REDIS_PREFIX: prefix,
      // A short window: the test waits for its end (Redis times it, not a clock the test can move).
      PLANTSTORE_RATE_LIMIT_AUTH_FAILURES: "3/2s",
      PLANTSTORE_JWT_ISSUER: ISSUER,
      PLANTSTORE_JWT_AUDIENCE: AUDIENCE,
      PLANTSTORE_JWT_SECRET: secret,
    };
    const servers: ServerProcess[] = [];
    try {
      servers.push(...(await startTwoProcesses(env)));
      const [a, b] = servers as [ServerProcess, ServerProcess];
      const issued = await issueToken(database.url);
      const jwt = await new SignJWT(claims())
        .setProtectedHeader({ alg: "HS256" })
        .sign(new TextEncoder().encode(secret));

      // Three failures between them use up the shared allowance; the next one on either is refused.
      for (const server of [a, b, a]) expectErrorShape(await get(server.url, "wrong"), 401, 40101);
      expectRateLimited(await get(b.url, "wrong"), "auth-failures", 3, 2);
      expectRateLimited(await get(a.url, "wrong"), "auth-failures", 3, 2);

      let retryAfter = 0;
      for (const server of [a, b]) {
        for (const token of [staticToken, issued.token, jwt]) expect((await get(server.url, token)).status).toBe(200);
        retryAfter = expectRateLimited(await get(server.url, tampered(issued.token)), "auth-failures", 3, 2);
      }
      // Within the Retry-After announced (and 100 ms), each process answers a wrong token with 401
      // again; a 429 before that is not counted, so the two 401s are two failures of the new window.
      const waitedFrom = Date.now();
      for (const server of [a, b]) {
        const answer = await eventually(
          async () => {
            const response = await get(server.url, "wrong");
            return response.status === 429 ? undefined : response;
          },
          { what: "401 again after the window", timeoutMs: retryAfter * 1000 + 100 - (Date.now() - waitedFrom) },
        );
        expectErrorShape(answer, 401, 40101);
      }
      for (const server of servers) expect(server.output()).not.toContain(issued.token);
    } finally {
      await Promise.all(servers.map((server) => server.stop()));
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length > 0) await redis.del(...keys);
      redis.disconnect();
    }
  });
});
