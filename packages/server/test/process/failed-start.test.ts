import { once } from "node:events";
import { readdirSync, readlinkSync } from "node:fs";
import { type AddressInfo, createServer, type Server } from "node:net";

import { eventually } from "@plantstore/test-support/eventually";
import { startFaultProxy } from "@plantstore/test-support/fault-proxy";
import { describe, expect, it } from "vitest";

import { startServer } from "../../src/index.ts";
import { createLogger } from "../../src/logger.ts";
import { testConfig } from "../support/harness.ts";
import { createTestDatabase, type TestDatabase, withAdminClient } from "../support/test-database.ts";

/** The shared Redis (CI has one); only its address is used, behind a proxy that refuses it. */
const REDIS_URL = process.env["REDIS_URL"] ?? "redis://127.0.0.1:6379";

/** A port something else already listens on, as a second instance or another service would. */
async function takenPort(): Promise<Server & AsyncDisposable> {
  const squatter = createServer((socket) => socket.destroy());
  squatter.listen(0, "127.0.0.1");
  await once(squatter, "listening");
  return Object.assign(squatter, {
    [Symbol.asyncDispose]: () => new Promise<void>((resolve) => squatter.close(() => resolve())),
  });
}

/**
 * Handles the server holds on the database: this process's file descriptors on the SQLite file
 * (and its -wal and -shm), or PostgreSQL sessions on the scratch database other than the test's own.
 */
async function openHandles(database: TestDatabase): Promise<number> {
  if (database.backend === "sqlite") {
    let count = 0;
    for (const fd of readdirSync("/proc/self/fd")) {
      let target: string;
      try {
        target = readlinkSync(`/proc/self/fd/${fd}`);
      } catch {
        continue; // closed between the listing and the read (the listing's own descriptor)
      }
      if (target.startsWith(database.name)) count++;
    }
    return count;
  }
  const { rows } = await withAdminClient((admin) =>
    admin.query<{ n: string }>(
      "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1 AND application_name <> 'plantstore-test'",
      [database.name],
    ),
  );
  return Number(rows[0]!.n);
}

describe("a start-up step that fails after the store, the token store and Redis were opened", () => {
  it("rejects and leaves no database handle open, with Redis refused and the metrics port taken", async () => {
    await using database = await createTestDatabase();
    const redisUpstream = new URL(REDIS_URL);
    await using redis = await startFaultProxy({
      host: redisUpstream.hostname,
      port: Number(redisUpstream.port || 6379),
    });
    redis.refuse();
    await using taken = await takenPort();
    expect(await openHandles(database)).toBe(0);

    const starting = startServer({
      config: testConfig(database.url, {
        redisUrl: redis.urlFor(REDIS_URL),
        metricsPort: (taken.address() as AddressInfo).port,
      }),
      logger: createLogger("silent"),
    });
    await expect(starting).rejects.toThrow(/EADDRINUSE/);

    // Closing is asynchronous on PostgreSQL (a backend leaves pg_stat_activity once its session ends).
    await eventually(async () => (await openHandles(database)) === 0, {
      what: `no handle left on the database ${database.name}`,
      timeoutMs: 5_000,
    });
  });

  it("closes its Redis connection as well when Redis was reachable", async () => {
    await using database = await createTestDatabase();
    const redisUpstream = new URL(REDIS_URL);
    await using redis = await startFaultProxy({
      host: redisUpstream.hostname,
      port: Number(redisUpstream.port || 6379),
    });
    await using taken = await takenPort();
    const starting = startServer({
      config: testConfig(database.url, {
        redisUrl: redis.urlFor(REDIS_URL),
        metricsPort: (taken.address() as AddressInfo).port,
      }),
      logger: createLogger("silent"),
    });
    await expect(starting).rejects.toThrow(/EADDRINUSE/);
    expect(redis.accepted()).toBeGreaterThan(0);
    await eventually(() => redis.open() === 0, {
      what: () => `the Redis connection closed (${redis.open()} open)`,
      timeoutMs: 5_000,
    });
    await eventually(async () => (await openHandles(database)) === 0, {
      what: `no handle left on the database ${database.name}`,
      timeoutMs: 5_000,
    });
  });

  it("rejects and leaves no database handle open when its own port is taken", async () => {
    await using database = await createTestDatabase();
    await using taken = await takenPort();
    const starting = startServer({
      config: testConfig(database.url, { port: (taken.address() as AddressInfo).port }),
      logger: createLogger("silent"),
    });
    await expect(starting).rejects.toThrow(/EADDRINUSE/);
    await eventually(async () => (await openHandles(database)) === 0, {
      what: `no handle left on the database ${database.name}`,
      timeoutMs: 5_000,
    });
  });
});
