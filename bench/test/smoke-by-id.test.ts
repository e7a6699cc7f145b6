import { describe, expect, it } from "vitest";

import { runBench, targetsAnsweringOnly200 } from "./run-bench.ts";

// One at a time: each starts three servers and prefills two stores, load the other smoke files'
// runs should not have to share in their short rounds.
describe("pnpm bench --smoke by id (the harness, as a process)", () => {
  // Under autocannon every 200 carried exactly the plant asked for; under wrk every 200 to a PATCH
  // named its plant and carried a strong ETag, and a PATCH with a stale ETag would be a 412 and fail
  // the run, so the update proves each PATCH carried the current one, on ours and on the floor.
  it.for([
    ["read", "autocannon"],
    ["update", "wrk"],
  ])(
    "%s under %s: by id from a prefilled store, beside its durable floor, with the ratio to it",
    { timeout: 90_000 },
    async ([scenario, generator]) => {
      const result = await runBench(scenario!, ["--scenario", scenario!, "--load-generator", generator!]);
      expect(result.options.loadGenerator).toBe(generator);
      const targets = targetsAnsweringOnly200(result);
      expect(Object.keys(targets).sort()).toEqual(["baseline", "floor", "ours"]);
      const ratios = result["ratios"] as Array<{ name: string; against: string }>;
      expect(ratios.map((r) => `${r.name} / ${r.against}`)).toContain("ours / floor");
    },
  );
});
