import { randomUUID } from "node:crypto";
import { Agent, request as httpRequest } from "node:http";

import { eventually } from "@plantstore/test-support/eventually";
import { type FaultProxy, startFaultProxy } from "@plantstore/test-support/fault-proxy";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { rawRequest, startTestServer, type TestServer, TOKEN } from "../support/harness.ts";
import { createTestDatabase } from "../support/test-database.ts";
import { issueToken } from "../support/token-helpers.ts";

/** The shared Redis (CI has one; not reachable is a failure, not a skip). */
const REDIS_URL = process.env["REDIS_URL"] ?? "redis://127.0.0.1:6379";
const POINTS = 100_000;
/** Keep-alive connections of the light load, and requests each sends in the measured phase. */
const CONNECTIONS = 4;
const REQUESTS_PER_CONNECTION = 150;

type Timed = { status: number; ms: number; rateLimit: string | undefined; url: string };

/** GET /plants on a keep-alive agent, timed from the request to the answer's last byte. */
function timedGet(url: string, token: string, agent: Agent): Promise<Timed> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    const req = httpRequest(`${url}/plants`, { agent, headers: { authorization: `Bearer ${token}` } }, (res) => {
      res.resume();
      res.on("end", () =>
        resolve({
          status: res.statusCode ?? 0,
          ms: performance.now() - started,
          rateLimit: res.headers["ratelimit"] as string | undefined,
          url,
        }),
      );
      res.on("error", reject);
    });
    req.on("error", reject);
    req.end();
  });
}

/**
 * A bounded light load: CONNECTIONS keep-alive connections, the i-th to `servers[i % length]`,
 * each sending `perConnection` requests one after another (or until `until()` holds); every
 * answer is collected.
 */
async function load(
  servers: TestServer[],
  token: string,
  options: { perConnection: number; until?: () => boolean },
): Promise<Timed[]> {
  const answers: Timed[] = [];
  await Promise.all(
    Array.from({ length: CONNECTIONS }, async (_, i) => {
      const agent = new Agent({ keepAlive: true, maxSockets: 1 });
      const url = servers[i % servers.length]!.url;
      try {
        for (let n = 0; n < options.perConnection && !(options.until?.() ?? false); n++)
          answers.push(await timedGet(url, token, agent));
      } finally {
        agent.destroy();
      }
    }),
  );
  return answers;
}

function p99(answers: Timed[]): number {
  const sorted = answers.map((a) => a.ms).sort((a, b) => a - b);
  return sorted[Math.ceil(sorted.length * 0.99) - 1]!;
}

async function metric(server: TestServer, line: RegExp): Promise<number | undefined> {
  const metrics = await rawRequest(server.url, {
    method: "GET",
    path: "/metrics",
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  const match = line.exec(metrics.text);
  return match === null ? undefined : Number(match[1]);
}

const circuitOpen = (server: TestServer) =>
  metric(server, /^plantstore_dependency_circuit_open\{dependency="redis"\} (\d+)$/m);

/** `r=` of the answer's RateLimit field: what is left of the token's allowance. */
const remaining = (answer: Timed) => Number(/;r=(\d+);/.exec(answer.rateLimit ?? "")?.[1]);

/**
 * Three instances on one database, each reaching the shared Redis through a fault proxy of its
 * own, with one key prefix per test so parallel tests on the shared Redis never meet: the first two
 * get the fault, the third (the control) keeps a healthy Redis.
 */
async function instancesBehindProxies() {
  const database = await createTestDatabase();
  const target = new URL(REDIS_URL);
  const proxies: FaultProxy[] = [];
  const servers: TestServer[] = [];
  const prefix = `plantstore-test:${randomUUID()}:`;
  const redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 5_000 });
  const dispose = async () => {
    for (const server of servers) await server.close();
    for (const proxy of proxies) await proxy.close();
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    redis.disconnect();
    await database.dispose();
  };
  try {
    await redis.connect();
    for (let i = 0; i < 3; i++) {
      const proxy = await startFaultProxy({ host: target.hostname, port: Number(target.port || 6379) });
      proxies.push(proxy);
      servers.push(
        await startTestServer(
          {
            redisUrl: proxy.urlFor(REDIS_URL),
            redisPrefix: prefix,
            rateLimits: { token: { name: "token", points: POINTS, windowSec: 60 }, authFailures: null },
          },
          { database },
        ),
      );
    }
    const loadToken = await issueToken(database.url);
    const sharingToken = await issueToken(database.url);
    const splitToken = await issueToken(database.url);
    /** True when a request on each instance moved the one shared counter in Redis by one each. */
    const countsShared = async (): Promise<boolean> => {
      const key = `${prefix}token:opaque:${sharingToken.id}`;
      const before = Number((await redis.get(key)) ?? 0);
      const agent = new Agent({ keepAlive: false });
      const viaA = await timedGet(servers[0]!.url, sharingToken.token, agent);
      const viaB = await timedGet(servers[1]!.url, sharingToken.token, agent);
      const after = Number((await redis.get(key)) ?? 0);
      return after === before + 2 && remaining(viaB) === remaining(viaA) - 1 && remaining(viaB) === POINTS - after;
    };
    const [a, b, control] = servers as [TestServer, TestServer, TestServer];
    return { a, b, control, faulty: proxies.slice(0, 2), loadToken, splitToken, countsShared, dispose };
  } catch (error) {
    await dispose();
    throw error;
  }
}

describe("rate limits shared through Redis when Redis hangs or refuses (the circuit breaker)", () => {
  let redis: Redis;
  beforeAll(async () => {
    redis = new Redis(REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 5_000 });
    await redis.connect();
    expect(await redis.ping()).toBe("PONG");
  });
  afterAll(() => redis.disconnect());

  for (const fault of ["freeze", "refuse"] as const) {
    it(`${fault}: once the circuit opens, p99 within 50 ms of a healthy instance's; shared counting again within 5 s after Redis answers`, async () => {
      const setup = await instancesBehindProxies();
      try {
        const { a, b, control, faulty, loadToken, splitToken, countsShared } = setup;
        expect(await countsShared()).toBe(true);
        await load([a, b, control], loadToken.token, { perConnection: 10 });

        for (const proxy of faulty) proxy[fault]();
        // The load goes on while the breakers notice (requests in flight then pay the command
        // timeout, 500 ms, once); what is measured is what comes after, as soon as both circuits
        // are open, and in any case after the first 2 s.
        const graceEnds = Date.now() + 2_000;
        const opened = { a: false, b: false };
        const noticed = () => (opened.a && opened.b) || Date.now() >= graceEnds;
        const noticing = load([a, b], loadToken.token, { perConnection: Number.MAX_SAFE_INTEGER, until: noticed });
        await eventually(
          async () => {
            opened.a = (await circuitOpen(a)) === 1;
            opened.b = (await circuitOpen(b)) === 1;
            return noticed();
          },
          { what: "the first 2 s of the fault", timeoutMs: 5_000, intervalMs: 50 },
        );
        expect((await noticing).every((answer) => answer.status === 200)).toBe(true);

        // The healthy baseline is measured at the same time, on the control instance, so that
        // this shared machine's stalls (which hold up every connection at once) fall on both.
        // Bounded in time too: a breaker that never opens fails in seconds, not after 300 timeouts.
        const measuredEnds = Date.now() + 8_000;
        const answers = await load([a, control, b, control], loadToken.token, {
          perConnection: REQUESTS_PER_CONNECTION,
          until: () => Date.now() >= measuredEnds,
        });
        expect(answers.every((answer) => answer.status === 200 && answer.rateLimit !== undefined)).toBe(true);
        const healthyP99 = p99(answers.filter((answer) => answer.url === control.url));
        const sickP99 = p99(answers.filter((answer) => answer.url !== control.url));
        expect(
          sickP99,
          `p99 ${sickP99.toFixed(1)} ms with Redis ${fault}, ${healthyP99.toFixed(1)} healthy`,
        ).toBeLessThanOrEqual(healthyP99 + 50);
        for (const server of [a, b]) expect(await circuitOpen(server)).toBe(1);
        expect(await circuitOpen(control)).toBe(0);
        // Counted per instance meanwhile: a token's first request on each instance is each one's first.
        const agent = new Agent({ keepAlive: false });
        for (const server of [a, b])
          expect(remaining(await timedGet(server.url, splitToken.token, agent))).toBe(POINTS - 1);
        for (const server of [a, b])
          expect(await metric(server, /^plantstore_rate_limit_fallbacks_total (\d+)$/m)).toBeGreaterThan(0);

        for (const proxy of faulty) proxy.pass();
        const thawed = Date.now();
        await eventually(countsShared, {
          what: () => `shared counting ${Date.now() - thawed} ms after Redis answers again`,
          timeoutMs: 5_000,
          intervalMs: 50,
        });
        expect(Date.now() - thawed).toBeLessThan(5_000);
        for (const server of [a, b]) {
          expect(await circuitOpen(server)).toBe(0);
          expect(
            await metric(server, /^plantstore_dependency_circuit_openings_total\{dependency="redis"\} (\d+)$/m),
          ).toBe(1);
        }
      } finally {
        await setup.dispose();
      }
    });
  }
});
