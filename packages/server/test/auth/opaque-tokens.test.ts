import { createHash } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";

import { eventually } from "@plantstore/test-support/eventually";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { newOpaqueToken, OPAQUE_TOKEN_PATTERN } from "../../src/auth/opaque-token.ts";
import { expectErrorShape, startTestServer, type TestServer, TOKEN } from "../support/harness.ts";
import { SkippableClock } from "../support/skippable-clock.ts";
import { databaseUrlOf, issueToken, listTokens, revokeToken } from "../support/token-helpers.ts";

let server: TestServer;
/** The server's clock: expiry and the last-used flush are timed by it, so the tests move it on. */
const clock = new SkippableClock();
beforeAll(async () => {
  server = await startTestServer({ tokenLastUsedFlushMs: 300 }, { clock });
});
afterAll(async () => {
  await server.close();
});

let nextId = 1;
const create = (token: string) =>
  server.send({
    method: "POST",
    path: "/plants",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: `{"id":${nextId++},"name":"Fern"}`,
  });
const list = (token: string) =>
  server.send({ method: "GET", path: "/plants", headers: { authorization: `Bearer ${token}` } });
const whoami = (token: string) =>
  server.send({ method: "GET", path: "/whoami", headers: { authorization: `Bearer ${token}` } });

const INVALID = 'Bearer realm="plantstore", error="invalid_token"';

describe("issued API tokens (ps_…)", () => {
  it("have the recognisable shape: ps_, a 16-hex id, 43 base62 characters (256 bits)", async () => {
    const { id, token } = await issueToken(databaseUrlOf(server));
    expect(token).toMatch(OPAQUE_TOKEN_PATTERN);
    expect(token.startsWith(`ps_${id}_`)).toBe(true);
    const other = await issueToken(databaseUrlOf(server));
    expect(other.token).not.toBe(token);
  });

  it("are stored only as a digest: the token is nowhere in the database", async () => {
    const { id, token } = await issueToken(databaseUrlOf(server));
    const secret = token.split("_")[2]!;
    const rows = await server.database.rows<Record<string, unknown>>(
      { sqlite: "SELECT * FROM api_tokens WHERE id = ?", postgres: "SELECT * FROM api_tokens WHERE id = $1" },
      [id],
    );
    expect(rows).toHaveLength(1);
    expect(Buffer.from(rows[0]!["secret_hash"] as Uint8Array)).toEqual(createHash("sha256").update(token).digest());
    const text = JSON.stringify(rows, (_, v: unknown) => (typeof v === "bigint" ? v.toString() : v));
    expect(text).not.toContain(secret);
    if (server.database.backend === "sqlite") {
      // And not in the file's bytes either (the WAL included), not even in free pages.
      for (const file of [server.database.name, `${server.database.name}-wal`]) {
        if (!existsSync(file)) continue;
        const bytes = readFileSync(file).toString("latin1");
        expect(bytes).not.toContain(token);
        expect(bytes).not.toContain(secret);
      }
    }
  });

  it("a valid token with both scopes creates and lists plants", async () => {
    const { token } = await issueToken(databaseUrlOf(server), { scopes: ["plants:read", "plants:write"] });
    expect((await create(token)).status).toBe(200);
    expect((await list(token)).status).toBe(200);
  });

  it("a token created while the server runs works within a second (no restart)", async () => {
    // Present it before it exists, so "unknown id" is cached; creating it must clear that.
    const issued = newOpaqueToken();
    expectErrorShape(await create(issued.token), 401, 40101);
    const createdAt = Date.now();
    await issueToken(databaseUrlOf(server), { issued });
    await eventually(async () => (await create(issued.token)).status === 200, {
      what: "the new token accepted",
      timeoutMs: 1_000 - (Date.now() - createdAt),
    });
  });

  it.each([
    ["a wrong secret", (t: string) => t.slice(0, -4) + (t.endsWith("AAAA") ? "BBBB" : "AAAA")],
    ["an unknown id", (t: string) => t.replace(/^ps_[0-9a-f]{16}_/, "ps_0000000000000000_")],
    ["a truncated token", (t: string) => t.slice(0, -1)],
  ])("%s answers 401 (40101) with error=invalid_token", async (_, mangle) => {
    const { token } = await issueToken(databaseUrlOf(server));
    const response = await create(mangle(token));
    expectErrorShape(response, 401, 40101);
    expect(response.headers["www-authenticate"]).toBe(INVALID);
  });

  it("an expired token answers 401 (40101), the moment it expires", async () => {
    const expiresAt = clock.now() + 60_000;
    const { token } = await issueToken(databaseUrlOf(server), { expiresAt });
    expect((await create(token)).status).toBe(200);
    // Shortly before its expiry it still works (the margin is for the request's own time); at its expiry it does not.
    await clock.skip(expiresAt - 5_000 - clock.now());
    expect((await create(token)).status).toBe(200);
    await clock.skip(expiresAt - clock.now());
    const response = await create(token);
    expectErrorShape(response, 401, 40101);
    expect(response.headers["www-authenticate"]).toBe(INVALID);
  });

  it("a revoked token answers 401 (40101) within a second", async () => {
    const { id, token } = await issueToken(databaseUrlOf(server));
    expect((await create(token)).status).toBe(200);
    const revokedAt = Date.now();
    expect((await revokeToken(databaseUrlOf(server), id))?.revokedAt).not.toBeNull();
    await eventually(async () => (await create(token)).status !== 200, {
      what: "the revoked token refused",
      timeoutMs: 1_000 - (Date.now() - revokedAt),
    });
    const response = await create(token);
    expectErrorShape(response, 401, 40101);
    expect(response.headers["www-authenticate"]).toBe(INVALID);
  });

  it("revoking by name revokes the active token of that name, which can then be reused", async () => {
    const first = await issueToken(databaseUrlOf(server), { name: "importer" });
    expect((await revokeToken(databaseUrlOf(server), "importer"))?.id).toBe(first.id);
    const second = await issueToken(databaseUrlOf(server), { name: "importer" });
    // Within the promised second: the revocation before the new token, seen together.
    await eventually(async () => (await create(second.token)).status === 200, {
      what: "the new token of that name accepted",
      timeoutMs: 1_000,
    });
    expectErrorShape(await create(first.token), 401, 40101);
    expect((await create(second.token)).status).toBe(200);
  });

  it("a token without plants:write gets 403 (40300) naming the scope, and may still list", async () => {
    const { token } = await issueToken(databaseUrlOf(server), { scopes: ["plants:read"] });
    const response = await create(token);
    expectErrorShape(response, 403, 40300);
    expect(response.headers["www-authenticate"]).toBe(
      'Bearer realm="plantstore", error="insufficient_scope", scope="plants:write"',
    );
    expect((await list(token)).status).toBe(200);
    const deleted = await server.send({
      method: "DELETE",
      path: "/plants/1",
      contractPath: "/plants/{id}",
      headers: { authorization: `Bearer ${token}` },
    });
    expectErrorShape(deleted, 403, 40300);
  });

  it("a token without plants:read gets 403 (40300) naming plants:read on GET /plants", async () => {
    const { token } = await issueToken(databaseUrlOf(server), { scopes: ["plants:write"] });
    const response = await list(token);
    expectErrorShape(response, 403, 40300);
    expect(response.headers["www-authenticate"]).toBe(
      'Bearer realm="plantstore", error="insufficient_scope", scope="plants:read"',
    );
    expect((await create(token)).status).toBe(200);
  });

  it("records last use without a write per request: in memory first, then one flush", async () => {
    const { id, token } = await issueToken(databaseUrlOf(server));
    const before = clock.now();
    const lastUsed = async () => (await listTokens(databaseUrlOf(server))).find((t) => t.id === id)?.lastUsedAt ?? null;
    for (let i = 0; i < 5; i++) expect((await list(token)).status).toBe(200);
    // The flush runs every 300 ms here: moved on by as much, the time is written (or being written).
    await clock.skip(300);
    const lastUsedAt = await eventually(lastUsed, { what: "the last-used time written", timeoutMs: 2_000 });
    expect(lastUsedAt).toBeGreaterThanOrEqual(before);
    expect(lastUsedAt).toBeLessThanOrEqual(clock.now());
  });
});

describe("GET /whoami", () => {
  it("describes an issued token: kind, id, name, scopes, expiry; never the secret", async () => {
    const expiresAt = Date.now() + 86_400_000;
    const { id, token } = await issueToken(databaseUrlOf(server), { name: "who", scopes: ["plants:read"], expiresAt });
    const response = await whoami(token);
    expect(response.status).toBe(200);
    expect(response.json).toEqual({
      kind: "opaque",
      id,
      name: "who",
      scopes: ["plants:read"],
      expiresAt: new Date(expiresAt).toISOString(),
    });
    expect(response.text).not.toContain(token.split("_")[2]);
  });

  it("describes a development token from PLANTSTORE_TOKENS", async () => {
    const response = await whoami(TOKEN);
    expect(response.json).toEqual({
      kind: "static",
      id: "static-1",
      name: "PLANTSTORE_TOKENS #1",
      scopes: ["plants:read", "plants:write"],
      expiresAt: null,
    });
  });

  it("needs a token (401) but no scope", async () => {
    expectErrorShape(await server.send({ method: "GET", path: "/whoami" }), 401, 40100);
    const { token } = await issueToken(databaseUrlOf(server), { scopes: ["plants:write"] });
    expect((await whoami(token)).status).toBe(200);
  });
});
