/**
 * Versioned, append-only schema changes for SQLite. A released migration is never edited; a new
 * change is a new entry. Each runs in its own transaction with its version recorded.
 */
export const sqliteMigrations: ReadonlyArray<{ version: number; name: string; sql: string }> = [
  {
    version: 1,
    name: "create plants",
    // INTEGER PRIMARY KEY is the 64-bit rowid: the whole int64 range, stored exactly.
    sql: `CREATE TABLE plants (
            id   INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            tag  TEXT
          ) STRICT;`,
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
    // The outbox: an event row is written in the same transaction as the plant it announces,
    // with one delivery row per subscriber active at that moment.
    sql: `CREATE TABLE webhook_subscribers (
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
  },
  {
    version: 4,
    name: "issued API tokens",
    // Only the SHA-256 digest of a token is stored. Names are unique among tokens not revoked, so a
    // name can be reused after its token is revoked. api_token_changes holds one counter, bumped
    // with every create and revoke, that servers poll to drop their cached tokens.
    sql: `CREATE TABLE api_tokens (
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
  },
];
