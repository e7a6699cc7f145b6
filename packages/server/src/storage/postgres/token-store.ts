import { DatabaseError, type Pool } from "pg";

import { type NewTokenRecord, TokenNameTakenError, type TokenRecord, type TokenStore } from "../token-store.ts";
import { createPostgresPool, inTransaction, type PostgresSettings, query } from "./pool.ts";

type TokenRow = {
  id: string;
  name: string;
  scopes: string;
  secret_hash: Buffer;
  created_at: bigint;
  expires_at: bigint | null;
  revoked_at: bigint | null;
  last_used_at: bigint | null;
};

const COLUMNS = "id, name, scopes, secret_hash, created_at, expires_at, revoked_at, last_used_at";
const time = (value: bigint | null) => (value === null ? null : Number(value));

function toRecord(row: TokenRow): TokenRecord {
  return {
    id: row.id,
    name: row.name,
    scopes: row.scopes.split(" ").filter((s) => s.length > 0),
    createdAt: Number(row.created_at),
    expiresAt: time(row.expires_at),
    revokedAt: time(row.revoked_at),
    lastUsedAt: time(row.last_used_at),
  };
}

/**
 * Tokens on PostgreSQL, with a small pool of their own (two connections for a server: the
 * 250 ms change poll and an occasional cache miss or last-used flush; one for the `tokens`
 * commands), so token reads never queue behind plant writes. Every instance sees a create or
 * revoke at its next poll of `api_token_changes`.
 */
export class PostgresTokenStore implements TokenStore {
  readonly #pool: Pool;

  constructor(settings: PostgresSettings, role: "server" | "admin") {
    this.#pool = createPostgresPool({
      ...settings,
      poolSize: role === "server" ? 2 : 1,
      applicationName: settings.applicationName ?? (role === "server" ? "plantstore-tokens" : "plantstore-admin"),
    });
  }

  async createToken(token: NewTokenRecord): Promise<void> {
    try {
      await inTransaction(this.#pool, async (client) => {
        await client.query(
          "INSERT INTO api_tokens (id, name, scopes, secret_hash, created_at, expires_at) VALUES ($1, $2, $3, $4, $5, $6)",
          [token.id, token.name, token.scopes.join(" "), token.secretHash, token.createdAt, token.expiresAt],
        );
        await client.query("UPDATE api_token_changes SET version = version + 1 WHERE id = 1");
      });
    } catch (error) {
      if (error instanceof DatabaseError && error.code === "23505" && error.constraint === "api_tokens_active_name") {
        throw new TokenNameTakenError(token.name);
      }
      throw error;
    }
  }

  async listTokens(): Promise<TokenRecord[]> {
    return (await query<TokenRow>(this.#pool, `SELECT ${COLUMNS} FROM api_tokens ORDER BY created_at DESC, id`)).map(
      toRecord,
    );
  }

  async findToken(id: string): Promise<(TokenRecord & { secretHash: Buffer }) | undefined> {
    const rows = await query<TokenRow>(
      this.#pool,
      `SELECT ${COLUMNS} FROM api_tokens WHERE id = $1`,
      [id],
      "plantstore_find_token",
    );
    const row = rows[0];
    return row === undefined ? undefined : { ...toRecord(row), secretHash: row.secret_hash };
  }

  async activeTokens(now: number, limit: number): Promise<(TokenRecord & { secretHash: Buffer })[] | undefined> {
    const rows = await query<TokenRow>(
      this.#pool,
      `SELECT ${COLUMNS} FROM api_tokens WHERE revoked_at IS NULL AND (expires_at IS NULL OR expires_at > $1) LIMIT $2`,
      [now, limit + 1],
      "plantstore_active_tokens",
    );
    if (rows.length > limit) return undefined;
    return rows.map((row) => ({ ...toRecord(row), secretHash: row.secret_hash }));
  }

  async revokeToken(idOrName: string, now: number): Promise<TokenRecord | undefined> {
    return inTransaction(this.#pool, async (client) => {
      // An id wins over a name, so `revoke <id>` always means that token. FOR UPDATE: two
      // concurrent revocations of one token record one time.
      const byId = await client.query<TokenRow>(`SELECT ${COLUMNS} FROM api_tokens WHERE id = $1 FOR UPDATE`, [
        idOrName,
      ]);
      const row =
        byId.rows[0] ??
        (
          await client.query<TokenRow>(
            `SELECT ${COLUMNS} FROM api_tokens WHERE name = $1 AND revoked_at IS NULL FOR UPDATE`,
            [idOrName],
          )
        ).rows[0];
      if (row === undefined) return undefined;
      if (row.revoked_at !== null) return toRecord(row);
      await client.query("UPDATE api_tokens SET revoked_at = $1 WHERE id = $2", [now, row.id]);
      await client.query("UPDATE api_token_changes SET version = version + 1 WHERE id = 1");
      return toRecord({ ...row, revoked_at: BigInt(now) });
    });
  }

  async tokenChangeVersion(): Promise<number> {
    const rows = await query<{ version: bigint }>(
      this.#pool,
      "SELECT version FROM api_token_changes WHERE id = 1",
      [],
      "plantstore_token_change_version",
    );
    return Number(rows[0]!.version);
  }

  async recordLastUsed(uses: ReadonlyMap<string, number>): Promise<void> {
    if (uses.size === 0) return;
    // One statement for every token used since the last flush.
    await query(
      this.#pool,
      `UPDATE api_tokens AS t SET last_used_at = GREATEST(coalesce(t.last_used_at, 0), u.at)
       FROM unnest($1::text[], $2::bigint[]) AS u(id, at) WHERE t.id = u.id`,
      [[...uses.keys()], [...uses.values()]],
    );
  }

  async close(): Promise<void> {
    await this.#pool.end();
  }
}
