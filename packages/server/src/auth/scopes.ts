import { ApiError } from "../errors.ts";
import { insufficientScopeChallenge } from "./challenge.ts";
import type { Principal, Scope } from "./principal.ts";

/**
 * The 403 for a principal that lacks any of `scopes`, naming the missing ones in its challenge
 * (RFC 6750 §3.1); undefined when it holds them all.
 */
export function insufficientScope(principal: Principal, scopes: readonly Scope[]): ApiError | undefined {
  const missing = scopes.filter((scope) => !principal.scopes.includes(scope));
  if (missing.length === 0) return undefined;
  return new ApiError("INSUFFICIENT_SCOPE", `this operation needs the scope ${missing.join(" ")}`, {
    headers: { "WWW-Authenticate": insufficientScopeChallenge(missing) },
  });
}
