import { mkdirSync } from "node:fs";
import { dirname } from "node:path";
import { DatabaseSync } from "node:sqlite";

/** How long a connection waits for another one's lock unless told otherwise. */
export const DEFAULT_BUSY_TIMEOUT_MS = 5_000;

export type ConnectionOptions = {
  /** A file path, or `:memory:`. */
  path: string;
  busyTimeoutMs?: number;
  /** `FULL` syncs every commit; `NORMAL` (in WAL mode) only at checkpoints. Unset: SQLite's default. */
  synchronous?: "FULL" | "NORMAL";
  readBigInts?: boolean;
};

/**
 * Opens one connection to the store's file in WAL mode. The busy timeout comes first: until it is
 * set SQLite answers "database is locked" at once, and even `PRAGMA journal_mode` needs a lock
 * that another process holds while it recovers the WAL on open or checkpoints it on close. Two
 * processes starting together on one file met exactly that.
 */
export function openConnection(options: ConnectionOptions): DatabaseSync {
  if (options.path !== ":memory:") mkdirSync(dirname(options.path), { recursive: true });
  const busyTimeoutMs = options.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS;
  const db = new DatabaseSync(options.path, { readBigInts: options.readBigInts ?? false });
  try {
    db.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`);
    enableWal(db, busyTimeoutMs);
    if (options.synchronous !== undefined) db.exec(`PRAGMA synchronous = ${options.synchronous}`);
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}

const SQLITE_BUSY = 5;
const pause = new Int32Array(new SharedArrayBuffer(4));

/**
 * Switches a file still in rollback mode to WAL. That needs an exclusive lock; processes that
 * read the header of a fresh file together then all want it, and SQLite breaks the deadlock by
 * answering one of them "database is locked" at once, without calling the busy handler. So this
 * retries for as long as the busy timeout would have waited. Once the file is in WAL (every
 * start after the first) the statement changes nothing and succeeds the first time.
 */
function enableWal(db: DatabaseSync, timeoutMs: number): void {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    try {
      db.exec("PRAGMA journal_mode = WAL");
      return;
    } catch (error) {
      const errcode = (error as { errcode?: unknown }).errcode;
      const busy = typeof errcode === "number" && (errcode & 0xff) === SQLITE_BUSY;
      if (!busy || performance.now() >= deadline) throw error;
      // Start-up, before the server listens: blocking this thread for a moment costs no request.
      Atomics.wait(pause, 0, 0, 10);
    }
  }
}
