import { afterEach } from "vitest";
// The server's test helper, not a copy: one validator for every package's tests.
import { checkingFetch } from "../../server/test/contract.ts";

const violations: unknown[] = [];

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

// The client turns a throw from its fetch into a PlantStoreProtocolError, which a test expecting
// an error may accept; so the test also fails here.
afterEach(() => {
  const seen = takeViolations();
  if (seen.length > 0) throw new AggregateError(seen, `answers that break the OpenAPI documents:\n${seen.map(String).join("\n")}`);
});
