import { defineConfig } from "vitest/config";

/**
 * Settings every project shares: workspace packages resolve to their TypeScript sources through
 * the `@plantstore/source` export condition, so tests need no build of their dependencies.
 */
export const sharedConfig = defineConfig({
  resolve: { conditions: ["@plantstore/source"] },
  ssr: { resolve: { conditions: ["@plantstore/source"] } },
  test: {
    environment: "node",
    // What vitest would otherwise decide from CI, fixed, so that a test's outcome does not depend
    // on it (turbo passes CI through without hashing it): `.only` fails the run (lint refuses it
    // too), and a missing snapshot is a failure rather than written.
    allowOnly: false,
    update: "none",
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // One module graph per worker, not per file: a fresh graph cost each server test file 1–3 s
    // of CPU importing Koa, tRPC, zod and the drivers again (vitest's "import" time: 176 s of the
    // server's SQLite pass; with this, 26 s, and the pass took 214 s of CPU instead of 311 s).
    // Files share no state through modules: each starts its own servers, stores and ports.
    isolate: false,
    setupFiles: [
      new URL("./tooling/vitest/fail-on-console.ts", import.meta.url).pathname,
      new URL("./tooling/vitest/fail-on-contract-violations.ts", import.meta.url).pathname,
    ],
  },
});
