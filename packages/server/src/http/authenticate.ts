import type Koa from "koa";
import { INVALID_TOKEN_CHALLENGE, REALM_CHALLENGE } from "../auth/challenge.ts";
import { readBearer } from "../auth/bearer.ts";
import type { Authenticator, Principal } from "../auth/principal.ts";
import type { RateLimits } from "../rate-limit/rate-limits.ts";
import { ApiError } from "../errors.ts";
import type { ClientAddress } from "./client-address.ts";

const tooManyRequests = (headers: Record<string, string>) =>
  new ApiError("RATE_LIMITED", `too many requests; retry after ${headers["Retry-After"]} s`, { headers });

/**
 * Turns a request's `Authorization` header into a principal, or throws the catalogued answer:
 * 401 without a token (plain challenge) or with a bad one (`error="invalid_token"`), 429 when the
 * client address is over its failed-authentication limit or the token over its request limit.
 * The RateLimit fields of the per-token limit are set on the response either way.
 */
export async function authenticateRequest(
  ctx: Koa.Context,
  authenticator: Authenticator,
  limits: RateLimits | undefined,
  clientAddress: ClientAddress,
): Promise<Principal> {
  const bearer = readBearer(ctx.get("authorization") || undefined);
  if (bearer.kind === "missing") {
    throw new ApiError("MISSING_TOKEN", "a bearer token is required", { headers: { "WWW-Authenticate": REALM_CHALLENGE } });
  }
  // Worked out only when needed (an address is blocked, or a guess failed), not on every request.
  let address: string | undefined;
  const addressOfClient = () => (address ??= clientAddress(ctx.req));
  // A guesser over its limit is refused before any token is checked.
  const blocked = limits?.addressBlocked(addressOfClient);
  if (blocked !== undefined) throw tooManyRequests(blocked.headers);

  const principal = bearer.kind === "token" ? await authenticator.authenticate(bearer.token) : undefined;
  if (principal === undefined) {
    const refused = await limits?.recordAuthFailure(addressOfClient());
    if (refused !== undefined) throw tooManyRequests(refused.headers);
    throw new ApiError("INVALID_TOKEN", "the bearer token is not valid", { headers: { "WWW-Authenticate": INVALID_TOKEN_CHALLENGE } });
  }

  const decision = principal.rateLimitKey === null ? undefined : await limits?.consumeToken(principal.rateLimitKey);
  if (decision !== undefined) {
    if (!decision.allowed) throw tooManyRequests(decision.headers);
    for (const [name, value] of Object.entries(decision.headers)) ctx.set(name, value);
  }
  return principal;
}
