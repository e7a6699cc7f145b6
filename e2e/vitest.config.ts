import { defineConfig, mergeConfig } from "vitest/config";

import { sharedConfig } from "../vitest.shared.ts";

// Each file packs, installs and starts servers: two at a time (most of it is waiting on pnpm and the
// servers), not more, so they do not starve each other on 2 cores.
export default mergeConfig(sharedConfig, defineConfig({ test: { maxWorkers: 2 } }));
