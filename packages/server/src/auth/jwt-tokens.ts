import { JsonDuplicateNameError, parseJsonLossless } from "@plantstore/schema";
import {
  createLocalJWKSet,
  createRemoteJWKSet,
  decodeJwt,
  decodeProtectedHeader,
  errors,
  type ExportedJWKSCache,
  jwksCache,
  type JWKSCacheInput,
  type JWTPayload,
  jwtVerify,
  type JWTVerifyGetKey,
} from "jose";
import { z } from "zod";

import { type Clock, systemClock } from "../clock.ts";
import { ApiError } from "../errors.ts";
import type { Authenticator, Principal } from "./principal.ts";
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
  /** Allowance for clocks that disagree, applied to `exp`, `nbf` and `iat`, in seconds. */
  clockSkewSec: number;
};

/**
 * The algorithm allow-list. A JWKS gives public keys, so only asymmetric algorithms; a shared
 * secret only HMAC. Never both: a server that accepted HS256 beside RS256 could be fooled into
 * checking an HMAC made with its own *public* key (algorithm confusion). `none` is never allowed.
 */
const ASYMMETRIC_ALGORITHMS = [
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
const HMAC_ALGORITHMS = ["HS256", "HS384", "HS512"];

/**
 * A verified token is trusted again without a signature check for at most this long (never past
 * `exp`, nor longer than the key set may be kept).
 */
const VERIFIED_CACHE_MS = 60_000;
const MAX_CACHED = 10_000;

/** 9999-12-31T23:59:59Z: the latest instant an RFC 3339 timestamp (and so `/whoami`'s `expiresAt`) can name. */
const MAX_EXP = 253_402_300_799;

/**
 * The claims a principal is made of, beyond what jwtVerify checks (it requires `exp` and `sub` to
 * be present and `exp` to be a number in the future, nothing about `sub`'s type or `exp`'s range).
 * A token whose claims do not fit is not valid: 401, never a 500 later on. `sub` is a string, so
 * `"123"` and `123` cannot share a rate-limit bucket.
 */
const PrincipalClaims = z.looseObject({
  sub: z.string().min(1).max(1024),
  exp: z.number().max(MAX_EXP),
});

// A JWS in compact form: three base64url parts.
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

/** Scopes from `scope` (RFC 8693: space-separated) and/or `scp` (an array, or a space-separated string). */
function scopesOf(payload: JWTPayload): string[] {
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

/**
 * Whether the token's header or claims name a member twice. jose reads them with `JSON.parse`, so
 * the last one wins, while another verifier of the same token (a gateway, an audit log) may take
 * the first: such a token says two things, and is not valid here.
 */
function namesAMemberTwice(token: string): boolean {
  const [header = "", payload = ""] = token.split(".");
  for (const part of [header, payload]) {
    try {
      parseJsonLossless(Buffer.from(part, "base64url").toString("utf8"));
    } catch (error) {
      if (error instanceof JsonDuplicateNameError) return true;
    }
  }
  return false;
}

/** A failure to *get* the keys (the identity provider is unreachable), as opposed to a bad token. */
function isKeySourceFailure(error: unknown): boolean {
  if (!(error instanceof errors.JOSEError)) return true;
  return error.code === "ERR_JOSE_GENERIC" || error.code === "ERR_JWKS_TIMEOUT" || error.code === "ERR_JWKS_INVALID";
}

/**
 * Bearer JWTs from an identity provider, verified with `jose`: signature, `iss`, `aud`, `exp`,
 * `nbf` (with the clock-skew allowance) and the algorithm allow-list; `exp` and `sub` are
 * required, of the types and ranges PrincipalClaims allows; an `iat` may not be in the future
 * (beyond the allowance, which jose checks only with a maximum token age), and neither the
 * header nor the claims may name a member twice. With a JWKS URL, keys are fetched on
 * first use, cached, and fetched again when a token names an unknown `kid` (at most once per
 * cool-down), so key rotation needs no restart; and at least every `maxAgeMs`, so a withdrawn key
 * — the way to revoke JWTs — stops working. If the set cannot be fetched then, requests with JWTs
 * get 503 rather than trust stale keys.
 *
 * Signature checks cost tens of microseconds, so a verified token is remembered (by its SHA-256,
 * never the token itself) for up to a minute, and not past its `exp`.
 */
export function createJwtAuthenticator(options: JwtOptions, clock: Clock = systemClock): Authenticator {
  // jose only fetches the key set (`reload`, one fetch at a time for everyone waiting) and writes
  // each one it fetched here. Its age and the cool-down are judged below on `clock`, not by jose's
  // own Date.now(), so a test can age the set without waiting.
  const fetched: Partial<ExportedJWKSCache> = {};
  const remote =
    "secret" in options.keys
      ? undefined
      : createRemoteJWKSet(new URL(options.keys.jwksUrl), {
          timeoutDuration: 5_000,
          [jwksCache]: fetched as JWKSCacheInput,
        });
  const algorithms = "secret" in options.keys ? HMAC_ALGORITHMS : ASYMMETRIC_ALGORITHMS;
  const trustFor = "secret" in options.keys ? VERIFIED_CACHE_MS : Math.min(VERIFIED_CACHE_MS, options.keys.maxAgeMs);
  const verified = new Map<string, { principal: Principal; until: number }>();
  /** The key set last fetched: jose's stamp of it (`uat`), and when it was fetched by `clock`. */
  let held: { uat: number; at: number; keys: JWTVerifyGetKey } | undefined;
  // A missing or stale key set is fetched for a blocked address too (else its first valid JWT would
  // wait for the slot), but at most once per cool-down and never more than once a second.
  const refetchGapMs = "secret" in options.keys ? 0 : Math.max(options.keys.cooldownMs, 1_000);
  let refetchedAt = -Infinity;

  /** Whether the set held was fetched less than `ms` ago. */
  const fetchedWithin = (ms: number) => held !== undefined && clock.now() < held.at + ms;

  /** Fetches the key set (or joins the fetch under way) and holds it. */
  async function fetchKeys(): Promise<JWTVerifyGetKey> {
    await remote!.reload();
    if (fetched.uat === undefined || fetched.jwks === undefined) throw new Error("the key set was not kept");
    if (held?.uat !== fetched.uat) held = { uat: fetched.uat, at: clock.now(), keys: createLocalJWKSet(fetched.jwks) };
    return held.keys;
  }

  /**
   * The JWKS for jwtVerify: the set held while younger than `maxAgeMs`, else fetched again; a `kid`
   * it lacks fetches it again unless the last fetch was within the cool-down (key rotation).
   */
  const remoteKeys: JWTVerifyGetKey = async (header, token) => {
    const { cooldownMs, maxAgeMs } = options.keys as { cooldownMs: number; maxAgeMs: number };
    const current = fetchedWithin(maxAgeMs) ? held!.keys : await fetchKeys();
    try {
      return await current(header, token);
    } catch (error) {
      if (error instanceof errors.JWKSNoMatchingKey && !fetchedWithin(cooldownMs))
        return (await fetchKeys())(header, token);
      throw error;
    }
  };
  const keys: Uint8Array | JWTVerifyGetKey =
    "secret" in options.keys ? new TextEncoder().encode(options.keys.secret) : remoteKeys;

  /**
   * The keys usable for a signature check with no fetch of its own: the secret, or the fetched key
   * set while it is fresh (fetched first, once for everyone waiting, if it is missing or stale and
   * was not tried within the gap); undefined when there are none.
   */
  async function keysInMemory(): Promise<Uint8Array | JWTVerifyGetKey | undefined> {
    if (remote === undefined) return keys;
    const { maxAgeMs } = options.keys as { maxAgeMs: number };
    if (fetchedWithin(maxAgeMs)) return held!.keys;
    if (!remote.reloading) {
      if (clock.now() - refetchedAt < refetchGapMs) return undefined;
      refetchedAt = clock.now();
    }
    try {
      return await fetchKeys();
    } catch {
      return undefined;
    }
  }

  return {
    authenticate(token, digest) {
      if (!COMPACT_JWS.test(token)) return undefined;
      const key = (digest ?? sha256(token)).toString("latin1");
      const now = clock.now();
      const cached = verified.get(key);
      if (cached !== undefined) {
        if (now < cached.until) return cached.principal;
        verified.delete(key);
      }
      return verify(token, key, now, keys).then((result) => (result === "no key held" ? undefined : result));
    },
    // A signature check with keys already held costs only CPU, so it is made: a forged token is
    // refused, and a valid one served, without competing for anything. Only a token whose key is
    // not held (an unknown `kid`, or no key set to be had) is "unknown".
    authenticateFromMemory(token, digest) {
      if (!COMPACT_JWS.test(token)) return "invalid";
      const key = (digest ?? sha256(token)).toString("latin1");
      const now = clock.now();
      const cached = verified.get(key);
      if (cached !== undefined && now < cached.until) return cached.principal;
      if (!couldVerify(token, now)) return "invalid";
      return keysInMemory().then((local) =>
        local === undefined
          ? "unknown"
          : verify(token, key, now, local).then((result) =>
              result === "no key held" ? "unknown" : (result ?? "invalid"),
            ),
      );
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

  async function verify(
    token: string,
    cacheKey: string,
    now: number,
    keySource: Uint8Array | JWTVerifyGetKey,
  ): Promise<Principal | undefined | "no key held"> {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, keySource as JWTVerifyGetKey, {
        issuer: options.issuer,
        audience: options.audience,
        algorithms,
        clockTolerance: options.clockSkewSec,
        currentDate: new Date(now),
        requiredClaims: ["exp", "sub"],
      }));
    } catch (error) {
      if (keySource !== keys && error instanceof errors.JWKSNoMatchingKey) return "no key held";
      if (isKeySourceFailure(error)) {
        throw new ApiError("UNAVAILABLE", "the identity provider's signing keys cannot be fetched", { cause: error });
      }
      return undefined;
    }
    const claims = PrincipalClaims.safeParse(payload);
    if (!claims.success) return undefined;
    // jose has checked that an `iat` is a number.
    if (typeof payload.iat === "number" && payload.iat > Math.floor(now / 1000) + options.clockSkewSec)
      return undefined;
    if (namesAMemberTwice(token)) return undefined;
    const { sub, exp } = claims.data;
    const expiresAt = exp * 1000;
    const name =
      typeof payload["client_id"] === "string"
        ? payload["client_id"]
        : typeof payload.azp === "string"
          ? payload.azp
          : undefined;
    const principal: Principal = {
      kind: "jwt",
      tokenId: sub,
      name,
      scopes: scopesOf(payload),
      expiresAt,
      // Per subject, not per token: a client that fetches a new token does not get a new allowance.
      rateLimitKey: `jwt:${sub}`,
    };
    if (verified.size >= MAX_CACHED) verified.delete(verified.keys().next().value!);
    verified.set(cacheKey, { principal, until: Math.min(now + trustFor, expiresAt + options.clockSkewSec * 1000) });
    return principal;
  }
}
