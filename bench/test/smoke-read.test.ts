import { describe, expect, it } from "vitest";

import { runBench, targetsAnsweringOnly200 } from "./run-bench.ts";

// By id, one scenario per file (see smoke-insert.test.ts): it starts three servers and prefills two stores.
// Under autocannon every 200 carried exactly the plant asked for (any other body fails the run).
describe("pnpm bench --smoke --scenario read (the harness, as a process)", () => {
  it(
    "read under autocannon: by id from a prefilled store, beside its durable floor, with the ratio to it",
    { timeout: 90_000 },
    async () => {
      const result = await runBench("read", ["--scenario", "read", "--load-generator", "autocannon"]);
      expect(result.options.loadGenerator).toBe("autocannon");
      const targets = targetsAnsweringOnly200(result);
      expect(Object.keys(targets).sort()).toEqual(["baseline", "floor", "ours"]);
      const ratios = result["ratios"] as Array<{ name: string; against: string }>;
      expect(ratios.map((r) => `${r.name} / ${r.against}`)).toContain("ours / floor");
    },
  );
});
