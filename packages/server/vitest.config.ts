import { defineConfig, mergeConfig } from "vitest/config";

import { sharedConfig } from "../../vitest.shared.ts";

/**
 * Two passes, one vitest project each (`pnpm test` runs both side by side; `test:sqlite` and
 * `test:postgres` one), each setting PLANTSTORE_TEST_BACKEND for its files; see
 * test/support/test-database.ts and test/README.md. The SQLite pass runs everything but the
 * PostgreSQL-only tests. The PostgreSQL pass runs only what can behave differently on PostgreSQL:
 * the HTTP, auth, rate-limit, webhook and observability suites exercise code above the storage
 * seam, which the store contract suite pins for both backends, so running them twice bought time
 * and no coverage.
 */

const POSTGRES_PASS = [
  // What every backend must do alike (plants, group commit, two stores racing, the webhook outbox
  // and its administration, issued tokens, migrations), called directly on PostgresStore.
  "test/storage/store-contract.test.ts",
  "test/storage/store-contract-admin.test.ts",
  // The change log both backends keep (order, one change per write with its webhook's data, none
  // from a failed transaction, retention, restarts): PostgreSQL takes its positions its own way.
  "test/storage/change-log.test.ts",
  // PostgreSQL alone: its store's own behaviour, several processes on one database, outages and
  // frozen connections, a restart of the database, the circuit breaker, lock waits, a signal
  // during start-up.
  "test/storage/postgres/**/*.test.ts",
  // SIGKILL under load: PostgreSQL's commit and our outbox must lose no answered plant or event.
  "test/process/crash-safety.test.ts",
  // Two workers (the cluster) writing to one database: PostgreSQL is the backend made for it.
  "test/process/workers.test.ts",
  // Two server processes' token caches kept in step through the database's change version.
  "test/auth/tokens-across-processes.test.ts",
  // Random creations, replays, conflicts, deletions and list pages, checked against a model:
  // the widest net over the PostgreSQL store's SQL (int8 edges, tag filter, keyset paging).
  "test/plants/model.property.test.ts",
  // A smoke of the HTTP suite (below): each plants operation end to end through the real server
  // with answers checked against the contract, so the PostgreSQL store is seen as a client sees it.
  // Creation, replay, conflict, durability across a restart (synchronous_commit), int8 ids exact.
  "test/plants/create.test.ts",
  // Refused creations: the 4xx answers, and nothing stored behind them.
  "test/plants/create-refused.test.ts",
  // Pages, the Link header, ids at the int64 bounds (int8 as text), delete and its 404.
  "test/plants/list-and-delete.test.ts",
  // One plant read, patched, replaced and deleted under If-Match / If-None-Match: each conditional
  // write is one atomic step in the store's SQL, and the ETag is computed alike on both backends.
  "test/plants/read-one.test.ts",
  "test/plants/conditional-changes.test.ts",
  // The ETag's secret lives in the database: the same tag from two instances on one PostgreSQL
  // database and after a restart, another on another database.
  "test/plants/etags.test.ts",
  // 50 PATCHes racing with one ETag: exactly one wins, on PostgreSQL's row locks as on SQLite's.
  "test/plants/concurrent-patches.test.ts",
  // The change feed reads each store's change log (positions, retention, webhook payloads alike):
  // resume, reset, tags, slow consumers and shutdown on PostgreSQL too.
  "test/plants/events.test.ts",
];

export default mergeConfig(
  sharedConfig,
  defineConfig({
    test: {
      // The server's tests mostly wait on sockets, child processes and databases (the SQLite pass
      // measured 305 s of wall time for 69 s of CPU with one file at a time, vitest's default on
      // 2 cores). Four files at once keep both cores busy; each test has its own scratch
      // database, Redis key prefix and ephemeral ports, so files do not share state. The four are
      // shared by both passes: the PostgreSQL pass's files start as soon as a slot is free rather
      // than after the SQLite pass's last, slowest file (they ran one pass after the other before).
      maxWorkers: 4,
      projects: [
        {
          extends: true,
          test: {
            name: "server (sqlite)",
            env: { PLANTSTORE_TEST_BACKEND: "sqlite" },
            exclude: ["**/node_modules/**", "**/dist/**", "src/storage/postgres/**", "test/storage/postgres/**"],
            // The process tests spawn dist/bin.js: a run outside turbo builds it first.
            globalSetup: ["../../tooling/vitest/build-spawned-bin.ts"],
          },
        },
        {
          extends: true,
          test: {
            name: "server (postgres)",
            env: { PLANTSTORE_TEST_BACKEND: "postgres" },
            include: POSTGRES_PASS,
            globalSetup: ["../../tooling/vitest/build-spawned-bin.ts", "test/support/postgres-global-setup.ts"],
          },
        },
      ],
    },
  }),
);
