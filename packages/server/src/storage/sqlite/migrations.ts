import type { DatabaseSync } from "node:sqlite";

import { type Migration, migrations as allMigrations } from "../migrations.ts";

/**
 * Applies pending migrations (../migrations.ts), each in its own transaction with its version
 * recorded. Used by every connection that may meet a fresh file: the store's and the token store's.
 */
export function migrateSqlite(db: DatabaseSync, migrations: ReadonlyArray<Migration> = allMigrations): void {
  db.exec(`CREATE TABLE IF NOT EXISTS schema_migrations (
             version    INTEGER PRIMARY KEY,
             name       TEXT NOT NULL,
             applied_at TEXT NOT NULL
           ) STRICT`);
  const applied = new Set(
    (db.prepare("SELECT version FROM schema_migrations").all() as Array<{ version: bigint }>).map((r) =>
      Number(r.version),
    ),
  );
  const record = db.prepare("INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)");
  const isApplied = db.prepare("SELECT 1 FROM schema_migrations WHERE version = ?");
  for (const migration of migrations) {
    if (applied.has(migration.version)) continue;
    db.exec("BEGIN IMMEDIATE");
    try {
      // Another process starting on the same file may have applied it while this one waited for
      // the write lock; the look before the lock is only a shortcut.
      if (isApplied.get(migration.version) !== undefined) {
        db.exec("COMMIT");
        continue;
      }
      db.exec(migration.sqlite);
      record.run(migration.version, migration.name, new Date().toISOString());
      db.exec("COMMIT");
    } catch (error) {
      db.exec("ROLLBACK");
      throw error;
    }
  }
}
