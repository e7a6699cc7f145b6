/**
 * Issued API tokens (`plantstore-server tokens …`), behind a small interface so each database
 * backend supplies its own. Times are epoch milliseconds. The secret is never stored: only its
 * SHA-256 digest (see auth/opaque-token.ts).
 */
export type TokenRecord = {
  id: string;
  name: string;
  scopes: string[];
  createdAt: number;
  expiresAt: number | null;
  revokedAt: number | null;
  lastUsedAt: number | null;
};

export type NewTokenRecord = {
  id: string;
  name: string;
  scopes: string[];
  secretHash: Buffer;
  createdAt: number;
  expiresAt: number | null;
};

/** Another active token already has this name (names are unique among tokens not revoked). */
export class TokenNameTakenError extends Error {
  constructor(name: string) {
    super(`an active token is already named ${JSON.stringify(name)}`);
    this.name = "TokenNameTakenError";
  }
}

export interface TokenStore {
  /** Stores a new token; throws TokenNameTakenError when its name is taken. Bumps the change version. */
  createToken(token: NewTokenRecord): Promise<void>;
  /** Every token, newest first; revoked and expired ones included. */
  listTokens(): Promise<TokenRecord[]>;
  /** The token with this id, with its secret digest for the constant-time comparison. */
  findToken(id: string): Promise<(TokenRecord & { secretHash: Buffer }) | undefined>;
  /**
   * Every token neither revoked nor expired at `now`, with its secret digest, so a server can hold
   * them all in memory; undefined when there are more than `limit` (then it looks tokens up one by one).
   */
  activeTokens(now: number, limit: number): Promise<(TokenRecord & { secretHash: Buffer })[] | undefined>;
  /**
   * Revokes the token with this id, or else the active token with this name. Answers the token as
   * it is now, or undefined when none matched. Bumps the change version.
   */
  revokeToken(idOrName: string, now: number): Promise<TokenRecord | undefined>;
  /**
   * A number that changes whenever a token is created or revoked. Servers poll this cheap read to
   * drop their cached tokens, so a revocation reaches every instance within the poll interval.
   */
  tokenChangeVersion(): Promise<number>;
  /** Records when tokens were last used (never moving a time backwards); one write for many uses. */
  recordLastUsed(uses: ReadonlyMap<string, number>): Promise<void>;
  close(): Promise<void>;
}
