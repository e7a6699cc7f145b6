import { defineConfig, mergeConfig } from "vitest/config";

import { sharedConfig } from "../vitest.shared.ts";

// Two smoke files at a time, each running its bench processes side by side: more would leave the
// servers of a 1 s round too little of the 2 cores to answer in it.
export default mergeConfig(sharedConfig, defineConfig({ test: { maxWorkers: 2 } }));
