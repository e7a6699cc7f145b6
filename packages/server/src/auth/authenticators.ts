import type { Authenticator, MemoryVerdict, Principal } from "./principal.ts";
import { sha256 } from "./static-tokens.ts";

type Result = Principal | undefined | Promise<Principal | undefined>;

/**
 * Tries each way of authenticating in turn: static development tokens (a constant-time
 * comparison), issued `ps_` tokens, then JWTs. The token is hashed once, here, and each one is
 * given the digest; each rejects tokens not of its own shape at once. Nothing is awaited unless an
 * authenticator has to wait (a cache miss, a signature check), so the usual request pays no
 * promise round trips for it.
 */
export function chainAuthenticators(
  authenticators: readonly Authenticator[],
): Authenticator & { close(): Promise<void> } {
  const from = (index: number, token: string, digest: Buffer): Result => {
    for (let i = index; i < authenticators.length; i++) {
      const result = authenticators[i]!.authenticate(token, digest);
      if (result instanceof Promise) return result.then((principal) => principal ?? from(i + 1, token, digest));
      if (result !== undefined) return result;
    }
    return undefined;
  };
  return {
    authenticate: (token, digest) => from(0, token, digest ?? sha256(token)),
    // In the same order as authenticate. One "unknown" makes the whole answer unknown: only that
    // authenticator's full check could tell.
    authenticateFromMemory(token, known) {
      const digest = known ?? sha256(token);
      const recall = (index: number, verdict: MemoryVerdict): MemoryVerdict | Promise<MemoryVerdict> => {
        for (let i = index; i < authenticators.length; i++) {
          const said = authenticators[i]!.authenticateFromMemory?.(token, digest) ?? "unknown";
          if (said instanceof Promise)
            return said.then((s) => (typeof s === "object" ? s : recall(i + 1, s === "unknown" ? s : verdict)));
          if (typeof said === "object") return said;
          if (said === "unknown") verdict = said;
        }
        return verdict;
      };
      return recall(0, "invalid");
    },
    async close() {
      await Promise.all(authenticators.map(async (a) => a.close?.()));
    },
  };
}
