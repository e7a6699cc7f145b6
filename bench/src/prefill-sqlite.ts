import { DatabaseSync } from "node:sqlite";

import type { IdMode } from "./scenarios.ts";
import { PLANT_NAME, PLANT_TAG } from "./scenarios.ts";

const CHUNK = 500_000;

/**
 * Fills a migrated SQLite database with `count` plants straight through SQL, before the server
 * starts: millions of rows in seconds, where HTTP would take minutes. Sequential ids are 1..count
 * (the list scenario's cursors rely on that); random ids are spread over [1, 2^53) like the
 * load's random ids, so new inserts land between stored rows instead of after them.
 */
export function prefillSqlite(path: string, count: number, ids: IdMode): void {
  const db = new DatabaseSync(path);
  try {
    // Nothing to protect yet: a crash here only means running the benchmark again.
    db.exec("PRAGMA synchronous = OFF");
    db.exec("PRAGMA cache_size = -262144");
    const sequential = db.prepare(
      `WITH RECURSIVE s(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM s WHERE i < ?)
       INSERT INTO plants (id, name, tag) SELECT i, ?, ? FROM s`,
    );
    const random = db.prepare(
      `WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < ?)
       INSERT OR IGNORE INTO plants (id, name, tag) SELECT 1 + abs(random() % 9007199254740991), ?, ? FROM s`,
    );
    const stored = () => Number((db.prepare("SELECT count(*) AS n FROM plants").get() as { n: number }).n);
    let have = stored();
    while (have < count) {
      const size = Math.min(CHUNK, count - have);
      db.exec("BEGIN");
      if (ids === "sequential") sequential.run(have + 1, have + size, PLANT_NAME, PLANT_TAG);
      else random.run(size, PLANT_NAME, PLANT_TAG);
      db.exec("COMMIT");
      // Random ids may collide (rarely): count again rather than assume.
      have = ids === "sequential" ? have + size : stored();
    }
    // Start the measured server from a compact WAL, as a long-running store would be.
    db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
  } finally {
    db.close();
  }
}

/** Plants in a SQLite database a server may have open: a read-only connection sees its commits (WAL). */
export function countSqlitePlants(path: string): number {
  const db = new DatabaseSync(path, { readOnly: true });
  try {
    return Number((db.prepare("SELECT count(*) AS n FROM plants").get() as { n: number }).n);
  } finally {
    db.close();
  }
}
