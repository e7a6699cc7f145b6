import { once } from "node:events";
import { createServer, globalAgent } from "node:http";
import type { AddressInfo } from "node:net";
import { Writable } from "node:stream";

import { eventually } from "@plantstore/test-support/eventually";
import { exportJWK, generateKeyPair, SignJWT } from "jose";
import { describe, expect, it } from "vitest";

import { startServer } from "../../src/index.ts";
import { createLogger } from "../../src/logger.ts";
import { rawRequest, testConfig, type TestResponse, TOKEN } from "../support/harness.ts";
import { createTestDatabase } from "../support/test-database.ts";
import { issueToken, revokeToken, tampered } from "../support/token-helpers.ts";

/**
 * Every kind of token through every kind of answer (200, 401, 403, 429, 500, 503), with the log
 * at its most verbose; then no token, nor the secret part of one, may appear in a log line, a
 * response (body or header), or /metrics.
 */
describe("no token ever appears in logs, answers or metrics", () => {
  it("holds for static, issued and JWT tokens, valid or not, through every status", async () => {
    await using database = await createTestDatabase();
    const databaseUrl = database.url;
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString("utf8"));
        done();
      },
    });
    const { privateKey, publicKey } = await generateKeyPair("RS256", { extractable: true });
    const jwk = { ...(await exportJWK(publicKey)), kid: "k1", alg: "RS256" };
    const jwks = createServer((_, res) => res.end(JSON.stringify({ keys: [jwk] })));
    jwks.listen(0, "127.0.0.1");
    await once(jwks, "listening");
    const jwksUrl = `http://127.0.0.1:${(jwks.address() as AddressInfo).port}/jwks`;

    const running = await startServer({
      config: testConfig(databaseUrl, {
        logLevel: "trace",
        metrics: "public",
        jwt: {
          issuer: "https://idp.test/",
          audience: "plantstore",
          keys: { jwksUrl, cooldownMs: 0, maxAgeMs: 60_000 },
          clockSkewSec: 30,
        },
        rateLimits: {
          token: { name: "token", points: 3, windowSec: 60 },
          authFailures: { name: "auth-failures", points: 4, windowSec: 60 },
        },
      }),
      logger: createLogger("trace", sink),
    });
    const answers: TestResponse[] = [];
    const call = async (token: string, method = "POST", path = "/plants", body = '{"id":1,"name":"a"}') => {
      const response = await rawRequest(running.url, {
        method,
        path,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json", "x-request-id": "leak-check" },
        ...(method === "POST" ? { body } : {}),
      });
      answers.push(response);
      return response;
    };
    try {
      const readOnly = await issueToken(databaseUrl, { scopes: ["plants:read"] });
      const writer = await issueToken(databaseUrl);
      const revoked = await issueToken(databaseUrl);
      const jwt = (scope: string, exp = Math.floor(Date.now() / 1000) + 600) =>
        new SignJWT({ iss: "https://idp.test/", aud: "plantstore", sub: "svc", scope, exp })
          .setProtectedHeader({ alg: "RS256", kid: "k1" })
          .sign(privateKey);
      const jwtWriter = await jwt("plants:write plants:read");
      const jwtReader = await jwt("plants:read");
      const jwtExpired = await jwt("plants:write", Math.floor(Date.now() / 1000) - 3600);
      const wrongOpaque = tampered(writer.token);

      expect((await call(writer.token)).status).toBe(200);
      expect((await call(jwtWriter, "GET", "/whoami")).status).toBe(200);
      expect((await call(readOnly.token)).status).toBe(403);
      expect((await call(jwtReader)).status).toBe(403);
      await revokeToken(databaseUrl, revoked.id);
      // Revocations reach the server within a second; until then the token is served (200, or 429
      // once its own allowance of three is spent).
      const refused = await eventually(
        async () => {
          const response = await call(revoked.token);
          return response.status === 200 || response.status === 429 ? undefined : response;
        },
        { what: "the revoked token refused", timeoutMs: 1_000 },
      );
      expect(refused.status).toBe(401);
      expect((await call(wrongOpaque)).status).toBe(401);
      expect((await call(jwtExpired)).status).toBe(401);
      for (let i = 0; i < 3; i++) await call(writer.token, "GET", "/plants");
      expect((await call(writer.token, "GET", "/plants")).status).toBe(429);
      expect((await call("guess-1")).status).toBe(401);
      const metrics = await rawRequest(running.url, { method: "GET", path: "/metrics" });
      expect(metrics.text).toContain('plantstore_rate_limited_total{reason="token"}');
      answers.push(metrics);
      await running.store.close();
      // 500 on SQLite, 503 on PostgreSQL: either way the failure is logged, with nothing secret.
      expect([500, 503]).toContain((await call(jwtWriter, "POST", "/plants", '{"id":2,"name":"b"}')).status);
      expect((await call("guess-2")).status).toBe(429);
      // The address is blocked now: a wrong token gets 429, a valid one is still served (issue 17).
      expect((await call(wrongOpaque, "GET", "/whoami")).status).toBe(429);
      expect((await call(TOKEN, "GET", "/whoami")).status).toBe(200);
    } finally {
      // Done with it as a client: idle keep-alive connections would hold the stop for its grace.
      globalAgent.destroy();
      await running.close();
      jwks.close();
    }
    await eventually(() => sink.writableLength === 0, { what: "every log line written to the sink" });

    // Everything the service said, in one text.
    const said = [...lines, ...answers.map((a) => `${a.status} ${JSON.stringify(a.headers)} ${a.text}`)].join("\n");
    expect(lines.length).toBeGreaterThan(10);
    const secrets = said.match(/ps_[0-9a-f]{16}_[0-9A-Za-z]{43}/g) ?? [];
    expect(secrets).toEqual([]);
    for (const pattern of [TOKEN, "guess-1", "guess-2", /eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+/]) {
      if (typeof pattern === "string") expect(said).not.toContain(pattern);
      else expect(said).not.toMatch(pattern);
    }
  });
});
