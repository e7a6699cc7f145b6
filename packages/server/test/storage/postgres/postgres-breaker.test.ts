import type { Pool } from "pg";
import { afterEach, describe, expect, it } from "vitest";

import { PostgresBreaker } from "../../../src/resilience/postgres-breaker.ts";
import { createPostgresPool, type PostgresSettings, query } from "../../../src/storage/postgres/pool.ts";
import { StoreError, StoreUnavailableError } from "../../../src/storage/store-errors.ts";
import { databaseBehindProxy } from "../../support/database-behind-proxy.ts";

// The client stops waiting for a statement after the query timeout plus its 1 s grace.
const QUERY_TIMEOUT_MS = 200;

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * One connection with the server's statement_timeout switched off, as behind a pooler that drops
 * startup parameters: a slow statement then meets only the client's own timeout.
 */
async function setUp() {
  const { proxy, url, dispose } = await databaseBehindProxy();
  cleanups.push(dispose);
  const settings: PostgresSettings = { url, poolSize: 1, connectTimeoutMs: 1_000, queryTimeoutMs: QUERY_TIMEOUT_MS };
  const pool: Pool = createPostgresPool(settings);
  cleanups.push(() => pool.end());
  const breaker = new PostgresBreaker(settings, { failureThreshold: 1, probeTimeoutMs: 500 });
  cleanups.push(async () => breaker.dispose());
  await query(pool, "SET statement_timeout = 0");
  return { proxy, pool, breaker };
}

describe("PostgresBreaker: a statement whose answer the client stopped waiting for", () => {
  it("is busy, not unreachable, while the database answers a probe, and does not open the circuit", async () => {
    const { pool, breaker } = await setUp();
    const slow = breaker.call(() => query(pool, "SELECT pg_sleep(3)"));
    await expect(slow).rejects.toBeInstanceOf(StoreError);
    await expect(slow).rejects.toMatchObject({ kind: "busy" });
    await expect(slow).rejects.toThrow(/statement timeout/);
    expect(breaker.state).toBe("closed");
  }, 20_000);

  it("is unreachable when the probe gets no answer either, and opens the circuit", async () => {
    const { proxy, pool, breaker } = await setUp();
    proxy.freeze();
    const silent = breaker.call(() => query(pool, "SELECT 1"));
    await expect(silent).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(breaker.state).toBe("open");
    // Open: the answer is immediate because nothing reaches the pool (not timed: a loaded machine
    // can hold up any answer).
    let reached = false;
    const refused = breaker.call(() => {
      reached = true;
      return query(pool, "SELECT 1");
    });
    await expect(refused).rejects.toThrow(/circuit is open/);
    expect(reached).toBe(false);
  }, 20_000);
});
