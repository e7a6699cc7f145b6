import { describe, expect, it } from "vitest";

import { runBench, targetsAnsweringOnly200 } from "./run-bench.ts";

// Proves the harness runs end to end against the built server, in every scenario; speed is never
// asserted, as it depends on the machine and whatever else runs on it. wrk, the default load
// generator, counts statuses only (and a PATCH's id and ETag); the tests whose point is the answers'
// bodies run autocannon, which compares every body. Under either, an insert run also checks that
// every creation answered 200 is a plant in the store (a run that fails it exits 1).
// One bench run per file (smoke-*.test.ts) where a run starts several servers: a file then takes
// as long as its run, and two files at a time (vitest.config.ts) keep both cores busy.
describe("pnpm bench --smoke insert (the harness, as a process)", () => {
  it(
    "insert: measures the baseline and each variant, here an empty and a prefilled store",
    { timeout: 90_000 },
    async () => {
      const result = await runBench("insert", ["--prefill", "0,500"]);
      expect(result.options.loadGenerator).toBe("wrk");
      const targets = targetsAnsweringOnly200(result);
      expect(Object.keys(targets).sort()).toEqual(["baseline", "ours[prefill=0]", "ours[prefill=500]"]);
      expect(targets["ours[prefill=0]"]!.summary.serverCpuUsPerRequest).toBeGreaterThan(0);
      const ratios = result["ratios"] as Array<{ name: string; against: string }>;
      expect(ratios.map((r) => `${r.name} / ${r.against}`)).toContain("ours[prefill=500] / ours[prefill=0]");
    },
  );
});
