import { describe, expect, it } from "vitest";

import { runBench, targetsAnsweringOnly200 } from "./run-bench.ts";

// By id, one scenario per file (see smoke-insert.test.ts): it starts three servers and prefills two stores.
// Under wrk every 200 to a PATCH named its plant and carried a strong ETag, and a PATCH with a stale
// ETag would be a 412 and fail the run, so it proves each PATCH carried the current one, on ours
// and on the floor.
describe("pnpm bench --smoke --scenario update (the harness, as a process)", () => {
  it(
    "update under wrk: by id from a prefilled store, beside its durable floor, with the ratio to it",
    { timeout: 90_000 },
    async () => {
      const result = await runBench("update", ["--scenario", "update", "--load-generator", "wrk"]);
      expect(result.options.loadGenerator).toBe("wrk");
      const targets = targetsAnsweringOnly200(result);
      expect(Object.keys(targets).sort()).toEqual(["baseline", "floor", "ours"]);
      const ratios = result["ratios"] as Array<{ name: string; against: string }>;
      expect(ratios.map((r) => `${r.name} / ${r.against}`)).toContain("ours / floor");
    },
  );
});
