import { defineConfig, mergeConfig } from "vitest/config";
import { sharedConfig } from "../../vitest.shared.ts";

/**
 * The behaviour suite runs once per storage backend (`pnpm test` = `test:sqlite` then
 * `test:postgres`), chosen by PLANTSTORE_TEST_BACKEND; see test/test-database.ts. Tests under
 * test/postgres/ (several processes on one database, outages) and the PostgreSQL store's own
 * unit tests need PostgreSQL, so they run in its pass only; SQLite's unit tests and test/sqlite/
 * (its disk filling up, its write lock held by another connection) in SQLite's.
 */
const postgres = process.env["PLANTSTORE_TEST_BACKEND"] === "postgres";

export default mergeConfig(
  sharedConfig,
  defineConfig({
    test: {
      name: postgres ? "server (postgres)" : "server (sqlite)",
      exclude: [
        "**/node_modules/**",
        "**/dist/**",
        ...(postgres ? ["src/storage/sqlite/**", "test/sqlite/**"] : ["test/postgres/**", "src/storage/postgres/**"]),
      ],
      globalSetup: postgres ? ["test/postgres-global-setup.ts"] : [],
    },
  }),
);
