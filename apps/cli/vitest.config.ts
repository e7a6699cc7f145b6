import { defineConfig, mergeConfig } from "vitest/config";

import { sharedConfig } from "../../vitest.shared.ts";

// The tests spawn dist/bin.js: a run outside turbo builds it (and the client it imports) first.
export default mergeConfig(
  sharedConfig,
  defineConfig({ test: { globalSetup: ["../../tooling/vitest/build-spawned-bin.ts"] } }),
);
