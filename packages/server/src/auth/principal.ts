/** Who is calling: the token's public identifier (never the secret) and what it may do. */
export type Principal = {
  tokenId: string;
  scopes: readonly string[];
};

/** Every scope this version knows; static development tokens carry all of them. */
export const ALL_SCOPES = ["plants:read", "plants:write"] as const;
export type Scope = (typeof ALL_SCOPES)[number];

/** The one seam between a presented bearer token and a principal; later issuers plug in here. */
export interface Authenticator {
  authenticate(token: string): Promise<Principal | undefined> | Principal | undefined;
}
