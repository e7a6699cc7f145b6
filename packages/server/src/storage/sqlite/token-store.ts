import type { DatabaseSync, StatementSync } from "node:sqlite";

import { type NewTokenRecord, TokenNameTakenError, type TokenRecord, type TokenStore } from "../token-store.ts";
import { migrateSqlite } from "./migrations.ts";
import { openConnection } from "./open-connection.ts";

type TokenRow = {
  id: string;
  name: string;
  scopes: string;
  secret_hash: Uint8Array;
  created_at: number;
  expires_at: number | null;
  revoked_at: number | null;
  last_used_at: number | null;
};

const COLUMNS = "id, name, scopes, secret_hash, created_at, expires_at, revoked_at, last_used_at";

function toRecord(row: TokenRow): TokenRecord {
  return {
    id: row.id,
    name: row.name,
    scopes: row.scopes.split(" ").filter((s) => s.length > 0),
    createdAt: row.created_at,
    expiresAt: row.expires_at,
    revokedAt: row.revoked_at,
    lastUsedAt: row.last_used_at,
  };
}

export type SqliteTokenStoreOptions = {
  /** A file path, or `:memory:` (then the tokens live only on this connection). */
  path: string;
  /**
   * `server`: the serving process reads tokens and writes only last-used times. Its connection
   * runs with `synchronous=NORMAL` (a last-used time lost to a power cut does not matter, and
   * the commit then costs no fsync on the event loop) and waits at most 250 ms for the write
   * lock, which the writer thread of this process gives up within one batch.
   * `admin`: the `tokens` commands; creations and revocations are synced to disk (`FULL`).
   */
  role: "server" | "admin";
};

/**
 * Tokens in the same SQLite file as the plants, on a connection of their own. `node:sqlite` is
 * synchronous; the reads here are single-row lookups by primary key (microseconds), and servers
 * make them only on a cache miss (see auth/opaque-tokens.ts).
 */
export class SqliteTokenStore implements TokenStore {
  readonly #db: DatabaseSync;
  readonly #find: StatementSync;
  readonly #version: StatementSync;
  readonly #active: StatementSync;
  readonly #touch: StatementSync;

  private constructor(db: DatabaseSync) {
    this.#db = db;
    this.#find = db.prepare(`SELECT ${COLUMNS} FROM api_tokens WHERE id = ?`);
    this.#version = db.prepare("SELECT version FROM api_token_changes WHERE id = 1");
    this.#active = db.prepare(
      `SELECT ${COLUMNS} FROM api_tokens WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > ?) LIMIT ?`,
    );
    this.#touch = db.prepare("UPDATE api_tokens SET last_used_at = max(coalesce(last_used_at, 0), ?) WHERE id = ?");
  }

  static open(options: SqliteTokenStoreOptions): SqliteTokenStore {
    // Start-up waits as long as the store does for a migration running in another process; only
    // then does a serving connection shorten its wait (above).
    const db = openConnection({ path: options.path, synchronous: options.role === "server" ? "NORMAL" : "FULL" });
    migrateSqlite(db);
    if (options.role === "server") db.exec("PRAGMA busy_timeout = 250");
    return new SqliteTokenStore(db);
  }

  #transaction<T>(work: () => T): T {
    this.#db.exec("BEGIN IMMEDIATE");
    try {
      const result = work();
      this.#db.exec("COMMIT");
      return result;
    } catch (error) {
      if (this.#db.isTransaction) this.#db.exec("ROLLBACK");
      throw error;
    }
  }

  #bumpVersion(): void {
    this.#db.prepare("UPDATE api_token_changes SET version = version + 1 WHERE id = 1").run();
  }

  async createToken(token: NewTokenRecord): Promise<void> {
    try {
      this.#transaction(() => {
        this.#db
          .prepare(
            "INSERT INTO api_tokens (id, name, scopes, secret_hash, created_at, expires_at) VALUES (?, ?, ?, ?, ?, ?)",
          )
          .run(token.id, token.name, token.scopes.join(" "), token.secretHash, token.createdAt, token.expiresAt);
        this.#bumpVersion();
      });
    } catch (error) {
      if (error instanceof Error && /UNIQUE constraint failed: api_tokens\.name/.test(error.message)) {
        throw new TokenNameTakenError(token.name);
      }
      throw error;
    }
  }

  async listTokens(): Promise<TokenRecord[]> {
    const rows = this.#db.prepare(`SELECT ${COLUMNS} FROM api_tokens ORDER BY created_at DESC, id`).all() as TokenRow[];
    return rows.map(toRecord);
  }

  async findToken(id: string): Promise<(TokenRecord & { secretHash: Buffer }) | undefined> {
    const row = this.#find.get(id) as TokenRow | undefined;
    return row === undefined ? undefined : { ...toRecord(row), secretHash: Buffer.from(row.secret_hash) };
  }

  async activeTokens(now: number, limit: number): Promise<(TokenRecord & { secretHash: Buffer })[] | undefined> {
    const rows = this.#active.all(now, limit + 1) as TokenRow[];
    if (rows.length > limit) return undefined;
    return rows.map((row) => ({ ...toRecord(row), secretHash: Buffer.from(row.secret_hash) }));
  }

  async revokeToken(idOrName: string, now: number): Promise<TokenRecord | undefined> {
    return this.#transaction(() => {
      // An id wins over a name, so `revoke <id>` always means that token.
      const row =
        (this.#find.get(idOrName) as TokenRow | undefined) ??
        (this.#db.prepare(`SELECT ${COLUMNS} FROM api_tokens WHERE name = ? AND revoked_at IS NULL`).get(idOrName) as
          TokenRow | undefined);
      if (row === undefined) return undefined;
      if (row.revoked_at === null) {
        this.#db.prepare("UPDATE api_tokens SET revoked_at = ? WHERE id = ?").run(now, row.id);
        this.#bumpVersion();
        return toRecord({ ...row, revoked_at: now });
      }
      return toRecord(row);
    });
  }

  async tokenChangeVersion(): Promise<number> {
    return Number((this.#version.get() as { version: number }).version);
  }

  async recordLastUsed(uses: ReadonlyMap<string, number>): Promise<void> {
    if (uses.size === 0) return;
    this.#transaction(() => {
      for (const [id, at] of uses) this.#touch.run(at, id);
    });
  }

  async close(): Promise<void> {
    if (this.#db.isOpen) this.#db.close();
  }
}
