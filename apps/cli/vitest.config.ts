import { defineConfig, mergeConfig } from "vitest/config";

import { sharedConfig } from "../../vitest.shared.ts";

// The tests spawn dist/bin.js: a run outside turbo builds it (and the client it imports) first.
export default mergeConfig(
  sharedConfig,
  // Three files at a time: they mostly wait on the processes they spawn and the servers they start,
  // each on its own port and database (vitest's default on 2 cores is one file at a time).
  defineConfig({ test: { globalSetup: ["../../tooling/vitest/build-spawned-bin.ts"], maxWorkers: 3 } }),
);
