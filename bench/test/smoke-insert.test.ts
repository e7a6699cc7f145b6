import { fileURLToPath } from "node:url";

import { describe, expect, it } from "vitest";

import { runBench, targetsAnsweringOnly200 } from "./run-bench.ts";

// Proves the harness runs end to end against the built server, in every scenario; speed is never
// asserted, as it depends on the machine and whatever else runs on it. wrk, the default load
// generator, counts statuses only (and a PATCH's id and ETag); the tests whose point is the answers'
// bodies run autocannon, which compares every body. Under either, an insert run also checks that
// every creation answered 200 is a plant in the store (a run that fails it exits 1).
// Concurrent: each is mostly waiting on start-up and its rounds, and none asserts a speed. The
// scenarios are split over three files (smoke-*.test.ts) so that none waits behind all the others.
describe.concurrent("pnpm bench --smoke insert (the harness, as a process)", () => {
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

  it(
    "insert under autocannon: runs the reference servers (the design card's floor, without and with durable storage, and the stock adapter) beside ours",
    { timeout: 90_000 },
    async () => {
      const floor = fileURLToPath(new URL("../src/floor-server.ts", import.meta.url));
      const stock = fileURLToPath(new URL("../src/stock-adapter-server.ts", import.meta.url));
      // The durable floor runs by itself beside ours, as the target "floor".
      const result = await runBench("references", [
        ...["--load-generator", "autocannon", "--compare-bin", floor, "--compare-bin", stock],
      ]);
      expect(result.options.loadGenerator).toBe("autocannon");
      // Each answered every request with the interface's body (any other body counts as a mismatch and fails the run).
      const targets = targetsAnsweringOnly200(result);
      expect(Object.keys(targets).sort()).toEqual(["baseline", "compare-1", "compare-2", "floor", "ours"]);
    },
  );
});
