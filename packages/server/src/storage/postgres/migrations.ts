import { connectForMigrations, type PostgresSettings } from "./pool.ts";

export type PostgresMigration = { version: number; name: string; sql: string };

/**
 * Versioned, append-only schema changes for PostgreSQL: the same story as SQLite's. A released
 * migration is never edited; a new change (another table, an index) is a new entry at the end.
 * Each runs in its own transaction (PostgreSQL DDL is transactional) with its version recorded.
 */
export const postgresMigrations: ReadonlyArray<PostgresMigration> = [
  {
    version: 1,
    name: "create plants",
    // bigint is int64: the whole id range, exact (read back as BigInt, never through a JS number).
    sql: `CREATE TABLE plants (
            id   bigint PRIMARY KEY,
            name text NOT NULL,
            tag  text
          );`,
  },
  {
    version: 2,
    name: "index plants by tag",
    // GET /plants?tag=… pages by id within one tag.
    sql: "CREATE INDEX plants_tag_id ON plants (tag, id);",
  },
  {
    version: 3,
    name: "webhook subscribers, outbox and deliveries",
    // The outbox: an event row is written in the same statement as the plant it announces, with
    // one delivery row per subscriber active at that moment. Times are epoch milliseconds, as on SQLite.
    sql: `CREATE TABLE webhook_subscribers (
            id              text PRIMARY KEY,
            url             text NOT NULL,
            secret          text NOT NULL,
            active          boolean NOT NULL DEFAULT true,
            disabled_reason text,
            created_at      bigint NOT NULL
          );
          CREATE TABLE webhook_events (
            id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            message_id text NOT NULL UNIQUE,
            payload    text NOT NULL,
            created_at bigint NOT NULL
          );
          CREATE TABLE webhook_deliveries (
            id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            event_id        bigint NOT NULL REFERENCES webhook_events (id),
            subscriber_id   text NOT NULL,
            status          text NOT NULL,
            attempts        integer NOT NULL DEFAULT 0,
            next_attempt_at bigint NOT NULL,
            lease_until     bigint NOT NULL DEFAULT 0,
            last_status     integer,
            last_error      text,
            updated_at      bigint NOT NULL,
            UNIQUE (event_id, subscriber_id)
          );
          -- Only pending rows are ever polled: a partial index stays small however long the history.
          CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending';
          CREATE INDEX webhook_deliveries_subscriber ON webhook_deliveries (subscriber_id) WHERE status = 'pending';
          CREATE TABLE webhook_attempts (
            id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            delivery_id  bigint NOT NULL REFERENCES webhook_deliveries (id),
            attempted_at bigint NOT NULL,
            status_code  integer,
            error        text,
            duration_ms  integer NOT NULL
          );
          CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id);`,
  },
  {
    version: 4,
    name: "issued API tokens",
    // As SQLite's migration 4: only the SHA-256 of a token is stored; names are unique among
    // tokens not revoked; api_token_changes holds the counter servers poll to drop their caches.
    sql: `CREATE TABLE api_tokens (
            id           text PRIMARY KEY,
            name         text NOT NULL,
            scopes       text NOT NULL,
            secret_hash  bytea NOT NULL,
            created_at   bigint NOT NULL,
            expires_at   bigint,
            revoked_at   bigint,
            last_used_at bigint
          );
          CREATE UNIQUE INDEX api_tokens_active_name ON api_tokens (name) WHERE revoked_at IS NULL;
          CREATE TABLE api_token_changes (
            id      integer PRIMARY KEY CHECK (id = 1),
            version bigint NOT NULL
          );
          INSERT INTO api_token_changes (id, version) VALUES (1, 0);`,
  },
];

// Any fixed int8 works: advisory locks are scoped to the database, so this serialises only
// processes migrating the same database. ("plntstr" in ASCII.)
const MIGRATION_LOCK = "31640567245198450";

/**
 * Applies pending migrations. Safe when several processes start at once: they queue on one
 * advisory lock, and each applies only what is still missing once it holds the lock. The lock is
 * a session lock, so a process that dies while migrating releases it with its connection.
 */
export async function migratePostgres(settings: PostgresSettings, migrations = postgresMigrations): Promise<void> {
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
        await client.query(migration.sql);
        await client.query("INSERT INTO schema_migrations (version, name) VALUES ($1, $2)", [migration.version, migration.name]);
        await client.query("COMMIT");
      } catch (error) {
        await client.query("ROLLBACK").catch(() => undefined);
        throw new Error(`migration ${migration.version} (${migration.name}) failed: ${error instanceof Error ? error.message : String(error)}`, {
          cause: error,
        });
      }
    }
    await client.query(`SELECT pg_advisory_unlock(${MIGRATION_LOCK})`);
  } finally {
    await client.end().catch(() => undefined);
  }
}
