/**
 * Reads `Authorization: Bearer <token>` (RFC 6750 §2.1). The scheme name is case-insensitive
 * (RFC 9110 §11.1); the token must be a token68. Other schemes count as no token at all.
 */
const BEARER = /^bearer[ \t]+([A-Za-z0-9\-._~+/]+=*)[ \t]*$/i;
const BEARER_SCHEME = /^bearer(?:[ \t]|$)/i;

export type BearerResult = { kind: "missing" } | { kind: "malformed" } | { kind: "token"; token: string };

export function readBearer(header: string | undefined): BearerResult {
  if (header === undefined || header.length === 0) return { kind: "missing" };
  const match = BEARER.exec(header);
  if (match?.[1] !== undefined) return { kind: "token", token: match[1] };
  return BEARER_SCHEME.test(header) ? { kind: "malformed" } : { kind: "missing" };
}
