import { defineConfig, mergeConfig } from "vitest/config";

import { sharedConfig } from "../../vitest.shared.ts";

// The browser tests load the built app (dist/) from the real server: a run outside turbo builds it
// (and what it imports) first, as the CLI's tests do for their bin.
export default mergeConfig(
  sharedConfig,
  defineConfig({ test: { globalSetup: ["../../tooling/vitest/build-spawned-bin.ts"] } }),
);
