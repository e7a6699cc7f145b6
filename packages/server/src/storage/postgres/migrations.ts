import { type Migration, migrations as allMigrations } from "../migrations.ts";
import { connectForMigrations, type PostgresSettings } from "./pool.ts";

// Any fixed int8 works: advisory locks are scoped to the database, so this serialises only
// processes migrating the same database. ("plntstr" in ASCII.)
const MIGRATION_LOCK = "31640567245198450";

/**
 * Applies pending migrations (../migrations.ts), each in its own transaction (PostgreSQL DDL is
 * transactional) with its version recorded. Safe when several processes start at once: they
 * queue on one advisory lock, and each applies only what is still missing once it holds the lock.
 * The lock is a session lock, so a process that dies while migrating releases it with its connection.
 */
export async function migratePostgres(
  settings: PostgresSettings,
  migrations: ReadonlyArray<Migration> = allMigrations,
): Promise<void> {
  const client = await connectForMigrations(settings);
  try {
    await client.query(`SELECT pg_advisory_lock(${MIGRATION_LOCK})`);
    await client.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
                          version    integer PRIMARY KEY,
                          name       text NOT NULL,
                          applied_at timestamptz NOT NULL DEFAULT now()
                        )`);
    const applied = new Set(
      (await client.query<{ version: number }>("SELECT version FROM schema_migrations")).rows.map((r) => r.version),
    );
    for (const migration of migrations) {
      if (applied.has(migration.version)) continue;
      await client.query("BEGIN");
      try {
        await client.query(migration.postgres);
        await client.query("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", [
          migration.version,
          migration.name,
        ]);
        await client.query("COMMIT");
      } catch (error) {
        await client.query("ROLLBACK").catch(() => undefined);
        throw new Error(
          `migration ${migration.version} (${migration.name}) failed: ${error instanceof Error ? error.message : String(error)}`,
          {
            cause: error,
          },
        );
      }
    }
    await client.query(`SELECT pg_advisory_unlock(${MIGRATION_LOCK})`);
  } finally {
    await client.end().catch(() => undefined);
  }
}
