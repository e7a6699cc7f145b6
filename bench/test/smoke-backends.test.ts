import { describe, expect, it } from "vitest";

import { runBench, targetsAnsweringOnly200 } from "./run-bench.ts";

// The insert smoke on both backends at once: see smoke-insert.test.ts for what the smokes prove.
describe("pnpm bench --smoke --backend sqlite,postgres (the harness, as a process)", () => {
  it(
    "insert: measures both backends side by side when asked, each beside its durable floor (the default run does so without --smoke)",
    { timeout: 90_000 },
    async () => {
      const result = await runBench("backends", ["--backend", "sqlite,postgres"]);
      expect(result.options.loadGenerator).toBe("wrk");
      const targets = targetsAnsweringOnly200(result);
      expect(Object.keys(targets).sort()).toEqual([
        "baseline",
        "floor[backend=postgres]",
        "floor[backend=sqlite]",
        "ours[backend=postgres]",
        "ours[backend=sqlite]",
      ]);
      const ratios = (result["ratios"] as Array<{ name: string; against: string }>).map(
        (r) => `${r.name} / ${r.against}`,
      );
      for (const backend of ["sqlite", "postgres"]) {
        expect(ratios).toContain(`ours[backend=${backend}] / floor[backend=${backend}]`);
        expect(ratios).toContain(`ours[backend=${backend}] / baseline`);
      }
    },
  );
});
