import { readFileSync } from "node:fs";
import { DatabaseSync } from "node:sqlite";

import { eventually } from "@plantstore/test-support/eventually";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { migrations } from "../../../src/storage/migrations.ts";
import { migrateSqlite } from "../../../src/storage/sqlite/migrations.ts";
import { type ServerProcess, startServerProcess } from "../../support/processes.ts";
import { createTestDatabase, type TestDatabase } from "../../support/test-database.ts";

/**
 * Several server processes on one SQLite file start together (a deploy, `PLANTSTORE_WORKERS`, a
 * restart beside a `tokens` command). A lock held by another process while one opens the file
 * must make it wait, not exit "database is locked": CI met exactly that with two processes.
 */
let database: TestDatabase;
const servers: ServerProcess[] = [];
beforeEach(async () => {
  database = await createTestDatabase("sqlite");
});
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.stop()));
  await database.dispose();
});

// The sleep system calls SQLite's busy handler waits in between its tries: nanosleep and
// clock_nanosleep, by the kernel's numbering for this architecture.
const SLEEP_SYSCALLS: Record<string, readonly number[]> = { x64: [35, 230], arm64: [101, 115] };

/**
 * Whether the main thread of process `pid` is asleep in a nanosleep: during start-up, before the
 * server listens, that is SQLite's busy handler waiting for the lock the test holds. Read from
 * /proc (the kernel's wait channel, or the system call under way), so nothing waits on a clock.
 */
function waitingForTheLock(pid: number): boolean {
  const read = (file: string) => {
    try {
      return readFileSync(`/proc/${pid}/${file}`, "utf8").trim();
    } catch {
      return "";
    }
  };
  if (/nanosleep/.test(read("wchan"))) return true;
  const syscall = Number(read("syscall").split(" ")[0]);
  return (SLEEP_SYSCALLS[process.arch] ?? []).includes(syscall);
}

/**
 * Starts `count` servers while `holder` holds its lock, releases it once every one of them is
 * waiting for it, and returns their starts.
 */
async function startWhileHeld(count: number, holder: DatabaseSync, release: () => void) {
  const env = { DATABASE_URL: database.url, PLANTSTORE_TOKENS: "a-static-token-of-32-characters-or-more" };
  const starting: Array<Promise<ServerProcess>> = [];
  const pids: number[] = [];
  let failed = false;
  for (let i = 0; i < count; i++) {
    const start = startServerProcess(env, { onSpawn: (pid) => pids.push(pid) });
    starting.push(
      start.then(
        (server) => (servers.push(server), server),
        (error: unknown) => {
          failed = true;
          throw error;
        },
      ),
    );
  }
  const settled = Promise.allSettled(starting);
  // A process that gave up at the lock instead of waiting has exited: its failure is the answer.
  await eventually(() => failed || (pids.length === count && pids.every(waitingForTheLock)), {
    what: "every server process waiting for the lock the test holds",
    timeoutMs: 20_000,
  });
  release();
  holder.close();
  return settled;
}

describe("SQLite servers starting together on one file", () => {
  it("wait for a lock another process holds while they open the file, then start", async () => {
    const seed = new DatabaseSync(database.name);
    seed.exec("PRAGMA journal_mode = WAL");
    migrateSqlite(seed);
    seed.close();
    // Exclusive locking mode in WAL keeps every other connection out, as WAL recovery on open or
    // the checkpoint of a last connection's close does for a moment.
    const holder = new DatabaseSync(database.name);
    holder.exec("PRAGMA locking_mode = EXCLUSIVE");
    holder.exec("BEGIN EXCLUSIVE");
    const starts = await startWhileHeld(2, holder, () => holder.exec("COMMIT"));
    for (const start of starts) expect(start.status === "fulfilled" ? "started" : String(start.reason)).toBe("started");
  });

  it("wait for a reader of a fresh file still in rollback mode before switching it to WAL", async () => {
    // Switching to WAL needs the exclusive lock, which a reader's shared lock holds off. (Two
    // servers that read the header in the same instant deadlock instead, which SQLite answers at
    // once; open-connection.ts retries that, but no test can make the instant happen on demand.)
    const holder = new DatabaseSync(database.name);
    holder.exec("CREATE TABLE held (x)");
    holder.exec("BEGIN");
    holder.prepare("SELECT count(*) FROM held").get();
    const starts = await startWhileHeld(3, holder, () => holder.exec("COMMIT"));
    for (const start of starts) expect(start.status === "fulfilled" ? "started" : String(start.reason)).toBe("started");
  });

  it("apply each migration once when they all find it pending and wait for the write lock", async () => {
    // The file is in WAL, as after any start, and its migrations table exists and is empty: every
    // server reads "nothing applied", then queues for the write lock behind the holder's
    // transaction, and each migration must run only once.
    const holder = new DatabaseSync(database.name, { readBigInts: true });
    holder.exec("PRAGMA journal_mode = WAL");
    migrateSqlite(holder, []);
    holder.exec("BEGIN IMMEDIATE");
    const starts = await startWhileHeld(3, holder, () => holder.exec("COMMIT"));
    for (const start of starts) expect(start.status === "fulfilled" ? "started" : String(start.reason)).toBe("started");
    const check = new DatabaseSync(database.name, { readOnly: true });
    try {
      const versions = check.prepare("SELECT version FROM schema_migrations ORDER BY version").all();
      expect(versions.map((row) => Number(row["version"]))).toEqual(migrations.map((m) => m.version));
    } finally {
      check.close();
    }
  });
});
