import { defineConfig, mergeConfig } from "vitest/config";
import { sharedConfig } from "../../vitest.shared.ts";

/**
 * The behaviour suite runs once per storage backend (`pnpm test` = `test:sqlite` then
 * `test:postgres`), chosen by PLANTSTORE_TEST_BACKEND; see test/support/test-database.ts. Tests
 * under test/storage/postgres/ (the PostgreSQL store, several processes on one database, outages)
 * need PostgreSQL, so they run in its pass only; test/storage/sqlite/ (the SQLite store, its disk
 * filling up) in SQLite's.
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
        ...(postgres
          ? ["src/storage/sqlite/**", "test/storage/sqlite/**"]
          : ["src/storage/postgres/**", "test/storage/postgres/**"]),
      ],
      globalSetup: postgres ? ["test/support/postgres-global-setup.ts"] : [],
    },
  }),
);
