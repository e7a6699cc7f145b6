import { eventually } from "@plantstore/test-support/eventually";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { OPAQUE_TOKEN_PATTERN } from "../../src/auth/opaque-token.ts";
import { expectErrorShape, rawRequest } from "../support/harness.ts";
import { type ServerProcess, startServerProcess } from "../support/processes.ts";
import { createTestDatabase, type TestDatabase } from "../support/test-database.ts";
import { issueToken, revokeToken, runBin } from "../support/token-helpers.ts";

/**
 * Two `plantstore-server serve` processes on one SQLite file, and the `tokens` commands run as
 * separate processes beside them, the way an operator would.
 */
let database: TestDatabase;
let databaseUrl: string;
let env: Record<string, string>;
let a: ServerProcess;
let b: ServerProcess;

beforeAll(async () => {
  database = await createTestDatabase();
  databaseUrl = database.url;
  env = { DATABASE_URL: databaseUrl, PLANTSTORE_TOKENS: "" };
  // Migrated first, as `plantstore-server migrate` would, so the two servers do not race to do it.
  expect((await runBin(["migrate"], env)).code).toBe(0);
  [a, b] = await Promise.all([startServerProcess(env), startServerProcess(env)]);
});
afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await database?.dispose();
});

const status = async (server: ServerProcess, token: string) =>
  (await rawRequest(server.url, { method: "GET", path: "/plants", headers: { authorization: `Bearer ${token}` } }))
    .status;

describe("revocation across two server processes sharing one database", () => {
  it("takes effect on both within one second", async () => {
    const { id, token } = await issueToken(databaseUrl);
    // Both accept it, so both have it cached.
    for (let i = 0; i < 3; i++) {
      expect(await status(a, token)).toBe(200);
      expect(await status(b, token)).toBe(200);
    }
    const revokedAt = Date.now();
    await revokeToken(databaseUrl, id);
    // Each refuses it within a second of the revocation (the polls of both run side by side).
    await Promise.all(
      [a, b].map((server, i) =>
        eventually(async () => (await status(server, token)) === 401, {
          what: `server ${"ab"[i]} refusing the revoked token`,
          timeoutMs: 1_000 - (Date.now() - revokedAt),
          intervalMs: 10,
        }),
      ),
    );
    // And it stays refused, with the invalid_token challenge.
    for (const server of [a, b]) {
      const response = await rawRequest(server.url, {
        method: "GET",
        path: "/plants",
        headers: { authorization: `Bearer ${token}` },
      });
      expectErrorShape(response, 401, 40101);
      expect(response.headers["www-authenticate"]).toBe('Bearer realm="plantstore", error="invalid_token"');
    }
  });
});

describe("plantstore-server tokens create | list | revoke", () => {
  it("issues a token both servers accept, lists it without the secret, and revokes it by name", async () => {
    const created = await runBin(
      [
        "tokens",
        "create",
        "--name",
        "ci-importer",
        "--scopes",
        "plants:read,plants:write",
        "--expires-in",
        "30d",
        "--json",
      ],
      env,
    );
    expect(created.code).toBe(0);
    const issued = JSON.parse(created.stdout) as {
      id: string;
      token: string;
      name: string;
      scopes: string[];
      expiresAt: string;
    };
    expect(issued.token).toMatch(OPAQUE_TOKEN_PATTERN);
    expect(issued).toMatchObject({ name: "ci-importer", scopes: ["plants:read", "plants:write"] });
    const days = (Date.parse(issued.expiresAt) - Date.now()) / 86_400_000;
    expect(days).toBeGreaterThan(29.9);
    expect(days).toBeLessThanOrEqual(30);

    // The commands that do not depend on one another run side by side, as separate processes.
    const [plain, listed, duplicate, badScope] = await Promise.all([
      runBin(["tokens", "create", "--name", "reader", "--scopes", "plants:read"], env),
      runBin(["tokens", "list"], env),
      runBin(["tokens", "create", "--name", "ci-importer", "--scopes", "plants:read"], env),
      runBin(["tokens", "create", "--name", "x", "--scopes", "plants:admin"], env),
      // Both servers accept the new token within a second (no restart).
      ...[a, b].map((server) =>
        eventually(async () => (await status(server, issued.token)) === 200, {
          what: "the new token accepted",
          timeoutMs: 1_000,
        }),
      ),
    ]);
    // Plain output: the token alone on stdout, the explanation on stderr.
    expect(plain.code).toBe(0);
    expect(plain.stdout.trim()).toMatch(OPAQUE_TOKEN_PATTERN);
    expect(plain.stderr).toMatch(/only time the token is shown/);
    expect(await status(a, issued.token)).toBe(200);
    expect(await status(b, issued.token)).toBe(200);

    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(/^ID\s+NAME\s+SCOPES\s+CREATED\s+EXPIRES\s+LAST USED\s+STATUS/);
    expect(listed.stdout).toContain(issued.id);
    expect(listed.stdout).toMatch(/ci-importer\s+plants:read,plants:write/);
    expect(listed.stdout).not.toContain(issued.token);
    expect(listed.stdout).not.toContain(issued.token.split("_")[2]);

    expect(duplicate.code).toBe(1);
    expect(duplicate.stderr).toMatch(/already named "ci-importer"/);
    expect(badScope.code).toBe(1);
    expect(badScope.stderr).toMatch(/unknown: plants:admin/);

    const revoked = await runBin(["tokens", "revoke", "ci-importer"], env);
    expect(revoked.code).toBe(0);
    expect(revoked.stdout).toContain(`revoked ${issued.id}`);
    const revokedAt = Date.now();
    const [noSuch, json] = await Promise.all([
      runBin(["tokens", "revoke", "no-such-token"], env),
      runBin(["tokens", "list", "--json"], env),
      // Refused by both within a second of the revocation.
      ...[a, b].map((server) =>
        eventually(async () => (await status(server, issued.token)) === 401, {
          what: "the revoked token refused",
          timeoutMs: 1_000 - (Date.now() - revokedAt),
        }),
      ),
    ]);
    expect(await status(a, issued.token)).toBe(401);
    expect(await status(b, issued.token)).toBe(401);
    expect(noSuch.code).toBe(1);

    const rows = JSON.parse(json.stdout) as Array<{ id: string; status: string; lastUsedAt: string | null }>;
    expect(rows.find((r) => r.id === issued.id)?.status).toBe("revoked");
    expect(json.stdout).not.toContain(issued.token);
  });

  it("records last use: the servers write it on shutdown at the latest", async () => {
    const { id, token } = await issueToken(databaseUrl);
    const before = Date.now();
    expect(await status(a, token)).toBe(200);
    expect(await status(b, token)).toBe(200);
    expect(await Promise.all([a.stop(), b.stop()])).toEqual([0, 0]);
    const listed = JSON.parse((await runBin(["tokens", "list", "--json"], env)).stdout) as Array<{
      id: string;
      lastUsedAt: string | null;
    }>;
    const lastUsedAt = Date.parse(listed.find((r) => r.id === id)?.lastUsedAt ?? "");
    expect(lastUsedAt).toBeGreaterThanOrEqual(before);
    for (const server of [a, b]) expect(server.output()).not.toContain(token);
  });
});
