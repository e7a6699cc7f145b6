import { checkAnswer, fetchContracts, type ResponseContract } from "./response-contract.ts";

/**
 * A fetch for clients under test that checks every answer against the seed and the document the
 * answering server serves, and hands back the untouched response. The document is fetched once
 * per origin (a later server on a reused port runs the same code, so serves the same document). A
 * client may turn a throw from its fetch into its own error, which a test expecting an error
 * would accept; so each violation also goes to `onViolation` for the test to fail on.
 */
export function checkingFetch(onViolation: (error: unknown) => void): typeof globalThis.fetch {
  const contracts = new Map<string, Promise<ResponseContract[]>>();
  return async (input, init) => {
    const response = await globalThis.fetch(input, init);
    const url = new URL(input instanceof Request ? input.url : input);
    try {
      let known = contracts.get(url.origin);
      if (known === undefined) contracts.set(url.origin, (known = fetchContracts(url.origin)));
      checkAnswer(await known, {
        method: init?.method ?? (input instanceof Request ? input.method : "GET"),
        path: url.pathname,
        status: response.status,
        contentType: response.headers.get("content-type"),
        body: await response.clone().text(),
      });
    } catch (error) {
      onViolation(error);
      throw error;
    }
    return response;
  };
}

/**
 * What `checkedFetch` saw, under a key of the global symbol registry: the shared setup file
 * tooling/vitest/fail-on-contract-violations.ts fails the test after which any are left.
 */
const VIOLATIONS = Symbol.for("plantstore.test.contractViolations");
const violations: unknown[] = ((globalThis as Record<symbol, unknown[] | undefined>)[VIOLATIONS] ??= []);

/**
 * The fetch every client talking to a real server is given: each answer is checked against the
 * seed and the served `/openapi.json` before the client reads it (fake fetches that answer off the
 * interface on purpose are not wrapped).
 */
export const checkedFetch = checkingFetch((error) => violations.push(error));

/** The violations `checkedFetch` saw since the last call, for a test that provokes one on purpose. */
export function takeViolations(): unknown[] {
  return violations.splice(0);
}
