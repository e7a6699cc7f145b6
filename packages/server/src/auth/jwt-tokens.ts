import {
  createRemoteJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  errors,
  jwtVerify,
  type JWTPayload,
  type JWTVerifyGetKey,
} from "jose";
import { ApiError } from "../errors.ts";
import type { Authenticator, MemoryVerdict, Principal } from "./principal.ts";
import { sha256 } from "./static-tokens.ts";

export type JwtOptions = {
  issuer: string;
  audience: string;
  /**
   * Either a JWKS URL (asymmetric keys from the identity provider) or a shared HMAC secret.
   * `cooldownMs`: least time between two fetches caused by unknown `kid`s; `maxAgeMs`: the set
   * is fetched again after this long, so a key the provider withdraws stops working.
   */
  keys: { jwksUrl: string; cooldownMs: number; maxAgeMs: number } | { secret: string };
  /** Allowance for clocks that disagree, applied to `exp` and `nbf`, in seconds. */
  clockSkewSec: number;
};

/**
 * The algorithm allow-list. A JWKS gives public keys, so only asymmetric algorithms; a shared
 * secret only HMAC. Never both: a server that accepted HS256 beside RS256 could be fooled into
 * checking an HMAC made with its own *public* key (algorithm confusion). `none` is never allowed.
 */
export const ASYMMETRIC_ALGORITHMS = [
  "RS256",
  "RS384",
  "RS512",
  "PS256",
  "PS384",
  "PS512",
  "ES256",
  "ES384",
  "ES512",
  "EdDSA",
  "Ed25519",
];
export const HMAC_ALGORITHMS = ["HS256", "HS384", "HS512"];

/**
 * A verified token is trusted again without a signature check for at most this long (never past
 * `exp`, nor longer than the key set may be kept).
 */
const VERIFIED_CACHE_MS = 60_000;
const MAX_CACHED = 10_000;

// A JWS in compact form: three base64url parts.
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/** Scopes from `scope` (RFC 8693: space-separated) and/or `scp` (an array, or a space-separated string). */
export function scopesOf(payload: JWTPayload): string[] {
  const scopes = new Set<string>();
  const add = (value: unknown) => {
    if (typeof value === "string") for (const s of value.split(" ")) if (s.length > 0) scopes.add(s);
  };
  add(payload["scope"]);
  const scp = payload["scp"];
  if (Array.isArray(scp)) scp.forEach(add);
  else add(scp);
  return [...scopes];
}

/** A failure to *get* the keys (the identity provider is unreachable), as opposed to a bad token. */
function isKeySourceFailure(error: unknown): boolean {
  if (!(error instanceof errors.JOSEError)) return true;
  return error.code === "ERR_JOSE_GENERIC" || error.code === "ERR_JWKS_TIMEOUT" || error.code === "ERR_JWKS_INVALID";
}

/**
 * Bearer JWTs from an identity provider, verified with `jose`: signature, `iss`, `aud`, `exp`,
 * `nbf` (with the clock-skew allowance) and the algorithm allow-list; `exp` and `sub` are
 * required. With a JWKS URL, keys are fetched on first use, cached, and fetched again when a token
 * names an unknown `kid` (at most once per cool-down), so key rotation needs no restart; and at
 * least every `maxAgeMs`, so a withdrawn key — the way to revoke JWTs — stops working. If the
 * set cannot be fetched then, requests with JWTs get 503 rather than trust stale keys.
 *
 * Signature checks cost tens of microseconds, so a verified token is remembered (by its SHA-256,
 * never the token itself) for up to a minute, and not past its `exp`.
 */
export function createJwtAuthenticator(options: JwtOptions): Authenticator {
  const keys: Uint8Array | JWTVerifyGetKey =
    "secret" in options.keys
      ? new TextEncoder().encode(options.keys.secret)
      : createRemoteJWKSet(new URL(options.keys.jwksUrl), {
          cooldownDuration: options.keys.cooldownMs,
          cacheMaxAge: options.keys.maxAgeMs,
          timeoutDuration: 5_000,
        });
  const algorithms = "secret" in options.keys ? HMAC_ALGORITHMS : ASYMMETRIC_ALGORITHMS;
  const trustFor = "secret" in options.keys ? VERIFIED_CACHE_MS : Math.min(VERIFIED_CACHE_MS, options.keys.maxAgeMs);
  const verified = new Map<string, { principal: Principal; until: number }>();

  return {
    authenticate(token, digest) {
      if (!COMPACT_JWS.test(token)) return undefined;
      const key = (digest ?? sha256(token)).toString("latin1");
      const now = Date.now();
      const cached = verified.get(key);
      if (cached !== undefined) {
        if (now < cached.until) return cached.principal;
        verified.delete(key);
      }
      return verify(token, key, now);
    },
    // Only the exact token string verified lately is valid from memory: one could not be guessed
    // without forging a signature. The rest is judged without one (see `couldVerify`).
    authenticateFromMemory(token, digest): MemoryVerdict {
      if (!COMPACT_JWS.test(token)) return "invalid";
      const now = Date.now();
      const cached = verified.get((digest ?? sha256(token)).toString("latin1"));
      if (cached !== undefined && now < cached.until) return cached.principal;
      return couldVerify(token, now) ? "unknown" : "invalid";
    },
  };

  /**
   * Whether a token could pass jwtVerify, judged by its header and claims, without the signature:
   * a malformed or expired token, or one for another issuer, audience or algorithm, needs no
   * signature check to be refused. Each test is one jwtVerify makes too, so a token that would
   * verify is never called invalid here.
   */
  function couldVerify(token: string, now: number): boolean {
    let alg: unknown, payload: JWTPayload;
    try {
      ({ alg } = decodeProtectedHeader(token));
      payload = decodeJwt(token);
    } catch {
      return false;
    }
    const { iss, aud, exp } = payload;
    return (
      typeof alg === "string" &&
      algorithms.includes(alg) &&
      iss === options.issuer &&
      (aud === options.audience || (Array.isArray(aud) && aud.includes(options.audience))) &&
      typeof exp === "number" &&
      exp > Math.floor(now / 1000) - options.clockSkewSec
    );
  }

  async function verify(token: string, cacheKey: string, now: number): Promise<Principal | undefined> {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, keys as JWTVerifyGetKey, {
        issuer: options.issuer,
        audience: options.audience,
        algorithms,
        clockTolerance: options.clockSkewSec,
        requiredClaims: ["exp", "sub"],
      }));
    } catch (error) {
      if (isKeySourceFailure(error)) {
        throw new ApiError("UNAVAILABLE", "the identity provider's signing keys cannot be fetched", { cause: error });
      }
      return undefined;
    }
    const expiresAt = payload.exp! * 1000;
    const name =
      typeof payload["client_id"] === "string"
        ? payload["client_id"]
        : typeof payload.azp === "string"
          ? payload.azp
          : undefined;
    const principal: Principal = {
      kind: "jwt",
      tokenId: payload.sub!,
      name,
      scopes: scopesOf(payload),
      expiresAt,
      // Per subject, not per token: a client that fetches a new token does not get a new allowance.
      rateLimitKey: `jwt:${payload.sub!}`,
    };
    if (verified.size >= MAX_CACHED) verified.delete(verified.keys().next().value!);
    verified.set(cacheKey, { principal, until: Math.min(now + trustFor, expiresAt + options.clockSkewSec * 1000) });
    return principal;
  }
}
