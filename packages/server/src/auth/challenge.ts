/** `WWW-Authenticate` challenges (RFC 6750 §3). */
export const REALM_CHALLENGE = 'Bearer realm="plantstore"';

/** A token was sent but is unknown, malformed, expired or revoked. */
export const INVALID_TOKEN_CHALLENGE = `${REALM_CHALLENGE}, error="invalid_token"`;

/** A valid token without the scope(s) the operation needs; `scope` lists them (RFC 6750 §3.1). */
export function insufficientScopeChallenge(scopes: readonly string[]): string {
  return `${REALM_CHALLENGE}, error="insufficient_scope", scope="${scopes.join(" ")}"`;
}
