import { describe, it } from "vitest";

import { expectByIdRun } from "./run-bench.ts";

// By id, one scenario per file (see smoke-insert.test.ts): it starts three servers and prefills two stores.
// Under wrk every 200 to a PATCH named its plant and carried a strong ETag, and a PATCH with a stale
// ETag would be a 412 and fail the run, so it proves each PATCH carried the current one, on ours
// and on the floor.
describe("pnpm bench --smoke --scenario update (the harness, as a process)", () => {
  it(
    "update under wrk: by id from a prefilled store, beside its durable floor, with the ratio to it",
    { timeout: 90_000 },
    () => expectByIdRun("update", "wrk"),
  );
});
