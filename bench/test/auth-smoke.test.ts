import { describe, expect, it } from "vitest";

import { runBenchWithOutput, targetsAnsweringOnly200 } from "./run-bench.ts";

// The harness with --auth: a third target, authenticated another way, answering only 200s.
// Speed is never asserted. Side by side: each run is three servers' short rounds, as light as a
// by-id smoke, and one after the other they made this the slowest file.
describe.concurrent("pnpm bench --smoke --auth", () => {
  it.each([["opaque"], ["jwt"]])(
    "--auth %s measures a third target beside ours and reports their ratio",
    { timeout: 120_000 },
    async (auth) => {
      const { result, output } = await runBenchWithOutput(`auth-${auth}`, ["--auth", auth]);
      expect(output).toMatch(new RegExp(`ours-${auth}/ours \\(static token\\) req/s: \\d`));
      const targets = targetsAnsweringOnly200(result);
      expect(Object.keys(targets).sort()).toEqual(["baseline", "ours", `ours-${auth}`]);
      expect((result["ratio"] as { authVsStatic?: number }).authVsStatic).toBeGreaterThan(0);
    },
  );
});
