import { defineConfig, mergeConfig } from "vitest/config";

import { sharedConfig } from "../../vitest.shared.ts";

// Three files at a time: they mostly wait on the real servers they start, each on its own port and
// database (vitest's default on 2 cores is one file at a time).
export default mergeConfig(sharedConfig, defineConfig({ test: { maxWorkers: 3 } }));
