import type { MigrationStatus } from "./plant-store.ts";

/**
 * One schema change, in each backend's dialect under one version: adding a table or an index is
 * one entry here, written for both, so the two schemas cannot drift apart.
 */
export type Migration = { version: number; name: string; sqlite: string; postgres: string };

/**
 * Versioned, append-only schema changes. A released migration is never edited; a new change is a
 * new entry at the end. Each runs in its own transaction with its version recorded (see
 * sqlite/migrations.ts and postgres/migrations.ts). Times are epoch milliseconds on both.
 */
export const migrations: ReadonlyArray<Migration> = [
  {
    version: 1,
    name: "create plants",
    // SQLite: INTEGER PRIMARY KEY is the 64-bit rowid: the whole int64 range, stored exactly.
    sqlite: `CREATE TABLE plants (
            id   INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            tag  TEXT
          ) STRICT;`,
    // PostgreSQL: bigint is int64: the whole id range, exact (read back as BigInt, never through a JS number).
    postgres: `CREATE TABLE plants (
            id   bigint PRIMARY KEY,
            name text NOT NULL,
            tag  text
          );`,
  },
  {
    version: 2,
    name: "index plants by tag",
    // GET /plants?tag=… pages by id within one tag.
    sqlite: "CREATE INDEX plants_tag_id ON plants (tag, id);",
    postgres: "CREATE INDEX plants_tag_id ON plants (tag, id);",
  },
  {
    version: 3,
    name: "webhook subscribers, outbox and deliveries",
    // The outbox: an event row is written in the same transaction (on PostgreSQL the same
    // statement) as the plant it announces, with one delivery row per subscriber active at that moment.
    sqlite: `CREATE TABLE webhook_subscribers (
            id              TEXT PRIMARY KEY,
            url             TEXT NOT NULL,
            secret          TEXT NOT NULL,
            active          INTEGER NOT NULL DEFAULT 1,
            disabled_reason TEXT,
            created_at      INTEGER NOT NULL
          ) STRICT;
          CREATE TABLE webhook_events (
            id         INTEGER PRIMARY KEY,
            message_id TEXT NOT NULL UNIQUE,
            payload    TEXT NOT NULL,
            created_at INTEGER NOT NULL
          ) STRICT;
          CREATE TABLE webhook_deliveries (
            id              INTEGER PRIMARY KEY,
            event_id        INTEGER NOT NULL REFERENCES webhook_events (id),
            subscriber_id   TEXT NOT NULL,
            status          TEXT NOT NULL,
            attempts        INTEGER NOT NULL DEFAULT 0,
            next_attempt_at INTEGER NOT NULL,
            lease_until     INTEGER NOT NULL DEFAULT 0,
            last_status     INTEGER,
            last_error      TEXT,
            updated_at      INTEGER NOT NULL,
            UNIQUE (event_id, subscriber_id)
          ) STRICT;
          CREATE INDEX webhook_deliveries_due ON webhook_deliveries (status, next_attempt_at);
          CREATE TABLE webhook_attempts (
            id           INTEGER PRIMARY KEY,
            delivery_id  INTEGER NOT NULL REFERENCES webhook_deliveries (id),
            attempted_at INTEGER NOT NULL,
            status_code  INTEGER,
            error        TEXT,
            duration_ms  INTEGER NOT NULL
          ) STRICT;
          CREATE INDEX webhook_attempts_delivery ON webhook_attempts (delivery_id);`,
    postgres: `CREATE TABLE webhook_subscribers (
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
    // Only the SHA-256 digest of a token is stored. Names are unique among tokens not revoked, so a
    // name can be reused after its token is revoked. api_token_changes holds one counter, bumped
    // with every create and revoke, that servers poll to drop their cached tokens.
    sqlite: `CREATE TABLE api_tokens (
            id           TEXT PRIMARY KEY,
            name         TEXT NOT NULL,
            scopes       TEXT NOT NULL,
            secret_hash  BLOB NOT NULL,
            created_at   INTEGER NOT NULL,
            expires_at   INTEGER,
            revoked_at   INTEGER,
            last_used_at INTEGER
          ) STRICT;
          CREATE UNIQUE INDEX api_tokens_active_name ON api_tokens (name) WHERE revoked_at IS NULL;
          CREATE TABLE api_token_changes (
            id      INTEGER PRIMARY KEY CHECK (id = 1),
            version INTEGER NOT NULL
          ) STRICT;
          INSERT INTO api_token_changes (id, version) VALUES (1, 0);`,
    postgres: `CREATE TABLE api_tokens (
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
  {
    version: 5,
    name: "write probe",
    // One row that readiness rewrites to prove a write commits again after a storage failure
    // (see write-health.ts): on a full disk a rollback succeeds, only a committed write proves
    // there is room, and it must touch no table that anything else reads.
    sqlite: `CREATE TABLE write_probe (
            id        INTEGER PRIMARY KEY CHECK (id = 1),
            probed_at INTEGER NOT NULL
          ) STRICT;`,
    postgres: `CREATE TABLE write_probe (
            id        integer PRIMARY KEY CHECK (id = 1),
            probed_at bigint NOT NULL
          );`,
  },
  {
    version: 6,
    name: "webhook event types",
    // A subscriber's chosen event types; NULL for one added before they existed (or without
    // --events): it keeps receiving exactly the bare new-plant payload and nothing else. An event
    // records its type (NULL for that bare payload), so its deliveries go to the right subscribers.
    // SQLite keeps the types as comma-separated text, PostgreSQL as an array.
    sqlite: `ALTER TABLE webhook_subscribers ADD COLUMN events TEXT;
          ALTER TABLE webhook_events ADD COLUMN type TEXT;`,
    postgres: `ALTER TABLE webhook_subscribers ADD COLUMN events text[];
          ALTER TABLE webhook_events ADD COLUMN type text;`,
  },
  {
    version: 7,
    name: "change log",
    // One row per committed change of a plant (created, updated, deleted), written in the same
    // transaction as the change: what GET /plants/events streams (src/changes/change-log.ts).
    // Positions follow commit order: on SQLite the one writer serialises commits and a position
    // is the next rowid; on PostgreSQL a sequence read under a lock held until commit (see
    // postgres/change-positions.ts). Pruning keeps the newest row, so a position is never reused.
    // `data` is the event's exact JSON, the same text the webhook events of the same change carry
    // (bare, or as an envelope's `data`); they record the position they came from (change_position; no foreign key, as changes are
    // pruned long before a failing delivery gives up).
    sqlite: `CREATE TABLE plant_changes (
            position     INTEGER PRIMARY KEY,
            kind         TEXT NOT NULL,
            plant_id     INTEGER NOT NULL,
            data         TEXT NOT NULL,
            tag          TEXT,
            previous_tag TEXT,
            at           INTEGER NOT NULL
          ) STRICT;
          ALTER TABLE webhook_events ADD COLUMN change_position INTEGER;`,
    postgres: `CREATE SEQUENCE plant_changes_position AS bigint;
          CREATE TABLE plant_changes (
            position     bigint PRIMARY KEY,
            kind         text NOT NULL,
            plant_id     bigint NOT NULL,
            data         text NOT NULL,
            tag          text,
            previous_tag text,
            at           bigint NOT NULL
          );
          ALTER SEQUENCE plant_changes_position OWNED BY plant_changes.position;
          ALTER TABLE webhook_events ADD COLUMN change_position bigint;`,
  },
  {
    version: 8,
    name: "store secrets",
    // Secrets that belong to the data rather than to one process, one row per use: `etag` keys the
    // plants' entity tags (plant-etag.ts), so every instance on the database answers the same tags,
    // and a copy of the database that carries this table keeps them. The first store opened on the
    // database adds the row (store-secrets.ts in each backend), with random bytes from node:crypto:
    // neither dialect's SQL can make a 256-bit secret without an extension.
    sqlite: `CREATE TABLE store_secrets (
            name       TEXT PRIMARY KEY,
            secret     BLOB NOT NULL,
            created_at INTEGER NOT NULL
          ) STRICT;`,
    postgres: `CREATE TABLE store_secrets (
            name       text PRIMARY KEY,
            secret     bytea NOT NULL,
            created_at bigint NOT NULL
          );`,
  },
];

/** For /readyz: how many migrations the database records, of those this build knows. */
export function migrationStatus(applied: number | bigint): MigrationStatus {
  return { applied: Number(applied), known: migrations.length };
}
