import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { createLogger } from "../logger.ts";
import { SqliteTokenStore } from "../storage/sqlite/token-store.ts";
import { newOpaqueToken } from "./opaque-token.ts";
import { OpaqueTokenAuthenticator, type TokenStoreQuery } from "./opaque-tokens.ts";

/** Against the real SQLite token store: what authenticating asks the database, counted by query. */
describe("OpaqueTokenAuthenticator: what an id costs the token store", () => {
  let dir: string;
  let admin: SqliteTokenStore;
  let server: SqliteTokenStore;
  let authenticator: OpaqueTokenAuthenticator | undefined;
  const queries: TokenStoreQuery[] = [];
  const count = (query: TokenStoreQuery) => queries.filter((q) => q === query).length;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), "plantstore-opaque-"));
    admin = SqliteTokenStore.open({ path: join(dir, "db.sqlite"), role: "admin" });
    server = SqliteTokenStore.open({ path: join(dir, "db.sqlite"), role: "server" });
    queries.length = 0;
  });
  afterEach(async () => {
    await authenticator?.close();
    await server.close();
    await admin.close();
    rmSync(dir, { recursive: true, force: true });
  });

  async function issue(options: { expiresAt?: number | null } = {}) {
    const issued = newOpaqueToken();
    await admin.createToken({
      id: issued.id,
      name: `t-${issued.id}`,
      scopes: ["plants:read"],
      secretHash: issued.secretHash,
      createdAt: Date.now(),
      expiresAt: options.expiresAt ?? null,
    });
    return issued;
  }
  const start = (maxHeld?: number) =>
    OpaqueTokenAuthenticator.start({
      store: server,
      logger: createLogger("silent"),
      lastUsedFlushMs: 60_000,
      onQuery: (query) => queries.push(query),
      ...(maxHeld === undefined ? {} : { maxHeld }),
    });

  it("holds every active token: made-up ids are refused with no lookup, and share change checks", async () => {
    const held = await issue();
    const expired = await issue({ expiresAt: Date.now() - 1 });
    authenticator = await start();
    expect(await authenticator.authenticate(held.token)).toMatchObject({ tokenId: held.id });
    expect(await authenticator.authenticate(expired.token)).toBeUndefined();
    const before = count("change_version");
    const guesses = Array.from({ length: 500 }, async () => authenticator!.authenticate(newOpaqueToken().token));
    expect(await Promise.all(guesses)).toEqual(Array<undefined>(500).fill(undefined));
    expect(count("find_token")).toBe(0);
    // 500 guesses at once wait for one change check between them (two, if a poll was in flight).
    expect(count("change_version") - before).toBeLessThanOrEqual(2);
    // A token created since the last check is found by the check its first request waits for.
    const fresh = await issue();
    expect(await authenticator.authenticateFromMemory(fresh.token)).toMatchObject({ tokenId: fresh.id });
    expect(count("find_token")).toBe(0);
  });

  it("beyond maxHeld active tokens, looks ids up one by one, and from a blocked address calls them unknown", async () => {
    const tokens = [await issue(), await issue(), await issue()];
    authenticator = await start(2);
    for (const { token, id } of tokens) expect(await authenticator.authenticate(token)).toMatchObject({ tokenId: id });
    expect(count("find_token")).toBe(3);
    // The latest are cached now (as many as would be held): no further lookup.
    expect(await authenticator.authenticate(tokens[2]!.token)).toMatchObject({ tokenId: tokens[2]!.id });
    expect(count("find_token")).toBe(3);
    const guess = newOpaqueToken().token;
    expect(await authenticator.authenticateFromMemory(guess)).toBe("unknown");
    expect(await authenticator.authenticate(guess)).toBeUndefined();
    expect(count("find_token")).toBe(4);
  });
});
