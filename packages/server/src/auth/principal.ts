/**
 * Who is calling: the credential's public identifier (never the secret), what it may do and until
 * when. `rateLimitKey` names the bucket the per-token limit counts in; null for the operator's own
 * `PLANTSTORE_TOKENS`, which are not limited (bootstrapping, development, bulk loads).
 */
export type Principal = {
  kind: "static" | "opaque" | "jwt";
  tokenId: string;
  name?: string | undefined;
  scopes: readonly string[];
  /** Epoch milliseconds, or null for a credential that does not expire. */
  expiresAt: number | null;
  rateLimitKey: string | null;
};

/** Every scope this version knows; static development tokens carry all of them. */
export const ALL_SCOPES = ["plants:read", "plants:write"] as const;
export type Scope = (typeof ALL_SCOPES)[number];

/**
 * What an authenticator can tell from what it holds in memory: the principal; `"invalid"` when
 * the token cannot be valid; `"unknown"` when only a database lookup or a key fetch would tell.
 */
export type MemoryVerdict = Principal | "invalid" | "unknown";

/**
 * The one seam between a presented bearer token and a principal. `undefined` means "not a valid
 * token" (401); a thrown ApiError (e.g. the token database is unreachable) is answered as it is.
 * `digest` is the token's SHA-256, when the caller has it already: every kind of token is looked
 * up or compared by it, so a request hashes its token once (see auth/authenticators.ts).
 */
export interface Authenticator {
  authenticate(token: string, digest?: Buffer): Promise<Principal | undefined> | Principal | undefined;
  /**
   * The same decision from what this instance holds, for a client address over its
   * failed-authentication limit (see http/authenticate.ts): never a lookup of this token, though a
   * signature check with keys already held (CPU only) is fine. It may wait only for work every
   * request shares, at a rate no flood can raise (the issued tokens' change check, a fetch of a
   * missing or stale key set). Without it, every token counts as `"unknown"`.
   */
  authenticateFromMemory?(token: string, digest?: Buffer): MemoryVerdict | Promise<MemoryVerdict>;
  /** Stops background work (cache refresh, last-used flush) and flushes what it holds. */
  close?(): Promise<void>;
}
