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
    testTimeout: 30_000,
    hookTimeout: 30_000,
    setupFiles: [new URL("./tooling/vitest/fail-on-console.ts", import.meta.url).pathname],
  },
});
