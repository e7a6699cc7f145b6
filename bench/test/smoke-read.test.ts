import { describe, it } from "vitest";

import { expectByIdRun } from "./run-bench.ts";

// By id, one scenario per file (see smoke-insert.test.ts): it starts three servers and prefills two stores.
// Under autocannon every 200 carried exactly the plant asked for (any other body fails the run).
describe("pnpm bench --smoke --scenario read (the harness, as a process)", () => {
  it(
    "read under autocannon: by id from a prefilled store, beside its durable floor, with the ratio to it",
    { timeout: 90_000 },
    () => expectByIdRun("read", "autocannon"),
  );
});
