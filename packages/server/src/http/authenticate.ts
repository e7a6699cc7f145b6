import type Koa from "koa";

import { readBearer } from "../auth/bearer.ts";
import { INVALID_TOKEN_CHALLENGE, REALM_CHALLENGE } from "../auth/challenge.ts";
import type { Authenticator, Principal } from "../auth/principal.ts";
import { ApiError } from "../errors.ts";
import { AUTHORIZED_CACHE_CONTROL } from "../operation-docs.ts";
import type { AddressBlock, RateLimits } from "../rate-limit/rate-limits.ts";
import type { ClientAddress } from "./client-address.ts";
import { connectionTokenDigest } from "./connection-token-digest.ts";

const tooManyRequests = (headers: Record<string, string>) =>
  new ApiError("RATE_LIMITED", `too many requests; retry after ${headers["Retry-After"]} s`, { headers });

/**
 * Turns a request's `Authorization` header into a principal, or throws the catalogued answer:
 * 401 without a token (plain challenge) or with a bad one (`error="invalid_token"`), 429 when the
 * token is over its request limit, or when it is not valid and the client address is over its
 * failed-authentication limit. A valid token is served whatever its address did: behind a shared
 * NAT one guesser must not lock every honest caller out. The RateLimit fields of the per-token
 * limit are set on the response either way, and so is `Cache-Control: private, no-cache`.
 */
export async function authenticateRequest(
  ctx: Koa.Context,
  authenticator: Authenticator,
  limits: RateLimits | undefined,
  clientAddress: ClientAddress,
): Promise<Principal> {
  // Whatever comes of it, the answer depends on the token: a cache may keep it only for this
  // client and must ask again before reusing it (an operation may say more, as /whoami does).
  ctx.set("Cache-Control", AUTHORIZED_CACHE_CONTROL);
  const bearer = readBearer(ctx.get("authorization") || undefined);
  if (bearer.kind === "missing") {
    throw new ApiError("MISSING_TOKEN", "a bearer token is required", {
      headers: { "WWW-Authenticate": REALM_CHALLENGE },
    });
  }
  // Worked out only when needed (an address is blocked, or a guess failed), not on every request.
  let address: string | undefined;
  const addressOfClient = () => (address ??= clientAddress(ctx.req));

  // The digest every authenticator compares, kept by the connection while it presents the same token.
  const token = bearer.kind === "token" ? bearer.token : undefined;
  const digest = token === undefined ? undefined : connectionTokenDigest(ctx.req.socket, token);
  let principal: Principal | undefined;
  const block = limits?.addressBlocked(addressOfClient);
  if (block !== undefined) {
    principal =
      token === undefined || digest === undefined
        ? undefined
        : await authenticateBlocked(authenticator, token, digest, block);
    if (principal === undefined) throw tooManyRequests(block.refuse().headers);
  } else {
    principal =
      token === undefined || digest === undefined ? undefined : await authenticator.authenticate(token, digest);
    if (principal === undefined) {
      const refused = await limits?.recordAuthFailure(addressOfClient());
      if (refused !== undefined) throw tooManyRequests(refused.headers);
      throw new ApiError("INVALID_TOKEN", "the bearer token is not valid", {
        headers: { "WWW-Authenticate": INVALID_TOKEN_CHALLENGE },
      });
    }
  }

  const decision = principal.rateLimitKey === null ? undefined : await limits?.consumeToken(principal.rateLimitKey);
  if (decision !== undefined) {
    if (!decision.allowed) throw tooManyRequests(decision.headers);
    for (const [name, value] of Object.entries(decision.headers)) ctx.set(name, value);
  }
  return principal;
}

/**
 * A token from an address over its failed-authentication limit: its principal, or undefined for a
 * 429 (never a 401, so the guesser learns nothing a wrong guess did not already tell). A guesser's
 * flood must stay cheap and must never crowd out a valid token, so it is decided from what this
 * instance holds, with no per-token lookup, no key fetch of its own and no Redis round trip:
 * - `PLANTSTORE_TOKENS`: the usual constant-time comparison of the SHA-256 digest with every one;
 * - issued `ps_` tokens: every active token is held in memory (up to MAX_HELD_TOKENS), so a made-up
 *   id is refused after at most the change check requests share (one per 50 ms), and a token
 *   created a moment ago is found by that check;
 * - JWTs: the signature is checked with the secret or the key set already fetched (CPU only; a set
 *   missing or past its age is fetched first, as for any request, at most once per cool-down); a
 *   malformed or expired one, or one for another issuer, audience or algorithm, is refused from
 *   its header and claims alone.
 * Only a token memory cannot decide gets the usual full check, and only when the address's slot is
 * free (see AddressBlock): a `ps_` id when more tokens are active than are held, a JWT naming a
 * `kid` not in the fetched set (or when no set could be fetched). A valid token frees
 * the slot again. Timing shows at most the token's shape and which of these paths it took, never
 * how much of a secret matched.
 *
 * Brute force: right and wrong guesses are told apart as for any address (200 against 429), at
 * whatever rate the server answers. That is safe because a guess has to hit a 256-bit `ps_`
 * secret or a JWT signature; `PLANTSTORE_TOKENS` are only as strong as the operator made them
 * (`dev` makes 256-bit ones).
 */
async function authenticateBlocked(
  authenticator: Authenticator,
  token: string,
  digest: Buffer,
  block: AddressBlock,
): Promise<Principal | undefined> {
  const verdict = await (authenticator.authenticateFromMemory?.(token, digest) ?? "unknown");
  if (verdict !== "unknown") return verdict === "invalid" ? undefined : verdict;
  if (!block.claimFullCheck()) return undefined;
  const principal = await authenticator.authenticate(token, digest);
  if (principal !== undefined) block.releaseFullCheck();
  return principal;
}
