import { afterEach } from "vitest";

/**
 * Fails a test after which `checkedFetch` (@plantstore/test-support/checked-fetch) has recorded
 * answers that break the OpenAPI documents. A client turns a throw from its fetch into its own
 * error, which a test expecting an error may accept; so the test also fails here.
 *
 * A setup file, not a hook in checked-fetch itself: the tests share one module graph per worker
 * (`isolate: false`), so a module is evaluated once per worker and a hook registered at its top
 * level belonged only to the first file that imported it there; setup files run for every file.
 * The violations are found through the global registry's symbol (the same key as checked-fetch's)
 * so that this file imports nothing of a package every project may not depend on.
 */
const VIOLATIONS = Symbol.for("plantstore.test.contractViolations");

afterEach(() => {
  const seen = ((globalThis as Record<symbol, unknown[] | undefined>)[VIOLATIONS] ?? []).splice(0);
  if (seen.length > 0)
    throw new AggregateError(seen, `answers that break the OpenAPI documents:\n${seen.map(String).join("\n")}`);
});
