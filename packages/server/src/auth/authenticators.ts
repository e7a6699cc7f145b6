import type { Authenticator, Principal } from "./principal.ts";

/**
 * Tries each way of authenticating in turn: static development tokens (a constant-time
 * comparison), issued `ps_` tokens, then JWTs. Each rejects tokens not of its own shape at once,
 * so a token costs only the checks that could accept it.
 */
export function chainAuthenticators(authenticators: readonly Authenticator[]): Authenticator & { close(): Promise<void> } {
  return {
    async authenticate(token: string): Promise<Principal | undefined> {
      for (const authenticator of authenticators) {
        const principal = await authenticator.authenticate(token);
        if (principal !== undefined) return principal;
      }
      return undefined;
    },
    async close() {
      await Promise.all(authenticators.map((a) => a.close?.()));
    },
  };
}
