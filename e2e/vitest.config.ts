import { defineConfig, mergeConfig } from "vitest/config";

import { sharedConfig } from "../vitest.shared.ts";

// Each file packs, installs and starts servers: one at a time, so they do not starve each other.
export default mergeConfig(sharedConfig, defineConfig({ test: { fileParallelism: false } }));
