import { fileURLToPath } from "node:url";

import { describe, expect, it } from "vitest";

import { runBench, targetsAnsweringOnly200 } from "./run-bench.ts";

// The insert smoke beside the reference servers: see smoke-insert.test.ts for what the smokes prove.
describe("pnpm bench --smoke --compare-bin (the harness, as a process)", () => {
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

  it(
    "read under autocannon: the observed floor (the floor plus a request id, a checked token, metrics and an access line) on a prefilled store of its own",
    { timeout: 90_000 },
    async () => {
      const observed = fileURLToPath(new URL("../src/floor-observed-server.ts", import.meta.url));
      // It has no `migrate` command: the harness migrates its database with the workspace's server.
      const result = await runBench("observed", [
        ...["--scenario", "read", "--load-generator", "autocannon", "--compare-bin", observed],
      ]);
      // Every 200 carried exactly the plant asked for, so its token was checked and let through.
      const targets = targetsAnsweringOnly200(result);
      expect(Object.keys(targets).sort()).toEqual(["baseline", "compare", "floor", "ours"]);
    },
  );
});
