import { randomBytes, randomUUID } from "node:crypto";
import { mkdirSync, writeFileSync } from "node:fs";
import { Agent, request as httpRequest } from "node:http";
import { fileURLToPath } from "node:url";

import { eventually } from "@plantstore/test-support/eventually";
import { Redis } from "ioredis";
import { type CryptoKey, exportJWK, generateKeyPair, type JWTPayload, SignJWT } from "jose";
import { describe, expect, it } from "vitest";

import { rawRequest } from "../support/harness.ts";
import { type ServerProcess, startServerProcess } from "../support/processes.ts";
import { createTestDatabase } from "../support/test-database.ts";
import { issueToken, startJwksServer } from "../support/token-helpers.ts";

/**
 * Issue 23, defect 2: from a client address over its failed-authentication limit, a flood of
 * forged JWTs and made-up `ps_` ids at full speed must neither crowd out valid tokens (a JWT
 * signed during the flood, a `ps_` token created during it) nor cost the database or the identity
 * provider more than a fixed bound. The acceptance run is the same test for longer:
 * `PLANTSTORE_FLOOD_SECONDS=30 pnpm exec vitest run test/auth/flood.test.ts`; each case
 * writes its numbers to test-artifacts/auth-under-flood-<instances>.json.
 */
const FLOOD_MS = Number(process.env["PLANTSTORE_FLOOD_SECONDS"] ?? "3") * 1000;
const CONNECTIONS = 16;
const ISSUER = "https://idp.example.test/";
const AUDIENCE = "plantstore";
const COOLDOWN_MS = 1_000;
const ARTIFACTS = fileURLToPath(new URL("../../../../test-artifacts/", import.meta.url));

const base64url = (bytes: Buffer | string) => Buffer.from(bytes).toString("base64url");

/** Right `iss`, `aud`, `alg`, a future `exp`; a junk signature, under the server's `kid`, none, or an unknown one. */
function forgedJwt(i: number): string {
  const kid = i % 4 === 0 ? undefined : i % 4 === 1 ? `k-${randomUUID()}` : "k1";
  const header = base64url(JSON.stringify({ alg: "RS256", ...(kid === undefined ? {} : { kid }) }));
  const payload = base64url(
    JSON.stringify({
      iss: ISSUER,
      aud: AUDIENCE,
      sub: `forger-${i}`,
      scope: "plants:read",
      exp: Math.floor(Date.now() / 1000) + 600,
    }),
  );
  return `${header}.${payload}.${base64url(randomBytes(256))}`;
}

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
const forgedOpaque = () =>
  `ps_${randomBytes(8).toString("hex")}_${Array.from(randomBytes(43), (b) => BASE62[b % 62]).join("")}`;

/** GET /plants on a keep-alive connection; the status, or 0 when the connection failed. */
function statusOf(agent: Agent, url: string, token: string): Promise<number> {
  return new Promise((resolve) => {
    const req = httpRequest(
      `${url}/plants?limit=1`,
      { agent, headers: { authorization: `Bearer ${token}` } },
      (res) => {
        res.resume();
        res.on("end", () => resolve(res.statusCode ?? 0));
        res.on("error", () => resolve(0));
      },
    );
    req.on("error", () => resolve(0));
    req.end();
  });
}

/** One labelled value of `plantstore_token_store_queries_total` (0 while never counted). */
async function storeQueries(url: string, query: string): Promise<number> {
  const metrics = await rawRequest(url, { method: "GET", path: "/metrics" });
  const line = new RegExp(`^plantstore_token_store_queries_total\\{query="${query}"\\} (\\d+)$`, "m").exec(
    metrics.text,
  );
  return Number(line?.[1] ?? 0);
}

const tally = (statuses: number[]) =>
  statuses.reduce<Record<number, number>>((counts, s) => ({ ...counts, [s]: (counts[s] ?? 0) + 1 }), {});

describe("valid tokens from a blocked address under a flood of forged ones (issue 23)", () => {
  for (const instances of [1, 2]) {
    it(
      `serves them on ${instances === 1 ? "one instance" : "two instances sharing Redis"}; the flood costs no token lookup and a bounded number of change checks and key fetches`,
      async () => {
        const signer = await generateKeyPair("RS256", { extractable: true });
        const jwks = await startJwksServer([
          { ...(await exportJWK(signer.publicKey)), kid: "k1", alg: "RS256", use: "sig" },
        ]);
        const sign = (payload: JWTPayload, key: CryptoKey = signer.privateKey) =>
          new SignJWT(payload).setProtectedHeader({ alg: "RS256", kid: "k1" }).sign(key);
        await using database = await createTestDatabase();
        const redisUrl = process.env["REDIS_URL"] ?? "redis://127.0.0.1:6379";
        const prefix = `plantstore-test:${randomUUID()}:`;
        const env = {
          DATABASE_URL: database.url,
          PLANTSTORE_TOKENS: "",
          PLANTSTORE_METRICS: "public",
          // The subject here is the failed-authentication limit; the per-token one is off so that
          // honest requests sent back to back are never refused for their own pace.
          PLANTSTORE_RATE_LIMIT_TOKEN: "off",
          PLANTSTORE_RATE_LIMIT_AUTH_FAILURES: "5/60s",
          PLANTSTORE_JWT_ISSUER: ISSUER,
          PLANTSTORE_JWT_AUDIENCE: AUDIENCE,
          PLANTSTORE_JWKS_URL: jwks.url,
          PLANTSTORE_JWKS_COOLDOWN_MS: String(COOLDOWN_MS),
          ...(instances === 2 ? { REDIS_URL: redisUrl, PLANTSTORE_REDIS_PREFIX: prefix } : {}),
        };
        const servers: ServerProcess[] = [];
        const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });
        try {
          for (let i = 0; i < instances; i++) servers.push(await startServerProcess(env));
          const urls = servers.map((s) => s.url);

          // Over the limit on every instance: five failures between them, then one more on each.
          for (let i = 0; i < 5; i++) expect(await statusOf(agent, urls[i % instances]!, `wrong-${i}`)).toBe(401);
          for (const url of urls) expect(await statusOf(agent, url, "wrong")).toBe(429);
          const before = await Promise.all(
            urls.map(async (url) => ({
              versions: await storeQueries(url, "change_version"),
              reads: await storeQueries(url, "active_tokens"),
            })),
          );
          const fetchesBefore = jwks.fetches();

          const started = Date.now();
          const until = started + FLOOD_MS;
          const flood: number[] = [];
          const floodWorkers = Array.from({ length: CONNECTIONS - 2 }, async (_, worker) => {
            for (let i = worker; Date.now() < until; i += CONNECTIONS) {
              const token = i % 2 === 0 ? forgedOpaque() : forgedJwt(i);
              flood.push(await statusOf(agent, urls[Math.floor(i / 2) % instances]!, token));
            }
          });

          // Honest callers on the same address, back to back (stricter than one every 0.5 s): a JWT
          // signed for each try, and `ps_` tokens created once the flood is under way.
          const honest = { jwt: [] as number[], opaque: [] as number[] };
          const opaqueTokens: string[] = [];
          // The first once the flood is under way, the second once the first has been in use a while
          // (unless the flood is over by then, on a slow machine).
          const over = () => Date.now() >= until;
          const created = (async () => {
            for (const [ready, what] of [
              [() => flood.length >= 100 || over(), () => `100 flood requests answered, got ${flood.length}`],
              [
                () => honest.opaque.length >= 5 || over(),
                () => `5 tries of the first token, got ${honest.opaque.length}`,
              ],
            ] as const) {
              await eventually(ready, { what, timeoutMs: FLOOD_MS + 5_000, intervalMs: 50 });
              if (!over()) opaqueTokens.push((await issueToken(database.url)).token);
            }
          })();
          const honestWorker = async (offset: number) => {
            for (let i = offset; Date.now() < until; i++) {
              const url = urls[i % instances]!;
              const jwt = await sign({
                iss: ISSUER,
                aud: AUDIENCE,
                sub: "honest-client",
                scope: "plants:read",
                jti: randomUUID(),
                exp: Math.floor(Date.now() / 1000) + 600,
              });
              honest.jwt.push(await statusOf(agent, url, jwt));
              const opaque = opaqueTokens[i % Math.max(1, opaqueTokens.length)];
              if (opaque !== undefined) honest.opaque.push(await statusOf(agent, url, opaque));
            }
          };
          await Promise.all([...floodWorkers, honestWorker(0), honestWorker(1), created]);
          const elapsedSec = (Date.now() - started) / 1000;

          const after = await Promise.all(
            urls.map(async (url) => ({
              versions: await storeQueries(url, "change_version"),
              reads: await storeQueries(url, "active_tokens"),
              lookups: await storeQueries(url, "find_token"),
            })),
          );
          const fetches = jwks.fetches() - fetchesBefore;
          const summary = {
            instances,
            seconds: elapsedSec,
            flood: { sent: flood.length, perSecond: Math.round(flood.length / elapsedSec), statuses: tally(flood) },
            honestJwt: tally(honest.jwt),
            honestOpaque: tally(honest.opaque),
            opaqueTokensCreated: opaqueTokens.length,
            perInstance: after.map((a, i) => ({
              changeChecksPerSecond: (a.versions - before[i]!.versions) / elapsedSec,
              tokenSetReads: a.reads - before[i]!.reads,
              tokenLookups: a.lookups,
            })),
            jwksFetches: fetches,
          };
          mkdirSync(ARTIFACTS, { recursive: true });
          writeFileSync(`${ARTIFACTS}auth-under-flood-${instances}.json`, `${JSON.stringify(summary, null, 2)}\n`);

          // A flood at full speed: refused, every one of it, and never with a 401 that would tell a guess apart.
          expect(flood.length, JSON.stringify(summary)).toBeGreaterThan(FLOOD_MS / 10);
          expect(tally(flood), JSON.stringify(summary)).toEqual({ 429: flood.length });
          // Valid tokens: served on at least 99% of tries (in practice every one).
          expect(opaqueTokens.length, JSON.stringify(summary)).toBeGreaterThanOrEqual(1);
          expect(honest.jwt.length, JSON.stringify(summary)).toBeGreaterThanOrEqual(10);
          expect(honest.opaque.length, JSON.stringify(summary)).toBeGreaterThanOrEqual(10);
          for (const statuses of [honest.jwt, honest.opaque])
            expect(
              statuses.filter((s) => s === 200).length / statuses.length,
              JSON.stringify(summary),
            ).toBeGreaterThanOrEqual(0.99);
          // The bound: no token looked up one by one; at most 4 polls and 20 shared change checks a
          // second (plus one in flight at each end); the token set read again only for the
          // tokens created; the key set fetched at most once per cool-down per instance.
          for (const [i, a] of after.entries()) {
            expect(a.lookups, JSON.stringify(summary)).toBe(0);
            expect(a.versions - before[i]!.versions, JSON.stringify(summary)).toBeLessThanOrEqual(24 * elapsedSec + 2);
            expect(a.reads - before[i]!.reads, JSON.stringify(summary)).toBeLessThanOrEqual(opaqueTokens.length);
          }
          expect(fetches, JSON.stringify(summary)).toBeLessThanOrEqual(
            instances * (1 + Math.ceil((elapsedSec * 1000) / COOLDOWN_MS)),
          );
        } finally {
          agent.destroy();
          await Promise.all(servers.map((server) => server.stop()));
          jwks.close();
          if (instances === 2) {
            const redis = new Redis(redisUrl, { lazyConnect: true, maxRetriesPerRequest: 1 });
            await redis.connect();
            const keys = await redis.keys(`${prefix}*`);
            if (keys.length > 0) await redis.del(...keys);
            redis.disconnect();
          }
        }
      },
      FLOOD_MS + 30_000,
    );
  }
});
