import { defineConfig } from "vitest/config";

// One run over every package and app; each project's own vitest.config.ts merges shared settings.
export default defineConfig({
  test: {
    projects: ["packages/*", "apps/*", "bench", "e2e"],
  },
});
