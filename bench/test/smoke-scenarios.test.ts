import { describe, expect, it } from "vitest";

import { runBench, type Summary } from "./run-bench.ts";

// The list, feed and soak scenarios of the harness, as the insert smoke (smoke-insert.test.ts) says.
describe.concurrent("pnpm bench --smoke scenarios (the harness, as a process)", () => {
  it("list under autocannon: pages through a prefilled store with full pages only", { timeout: 90_000 }, async () => {
    const result = await runBench("list", [
      ...["--scenario", "list", "--prefill", "300", "--limit", "50", "--load-generator", "autocannon"],
    ]);
    const targets = result["targets"] as Record<string, { summary: Summary }>;
    // Every 200 carried a full page of 50 (a short or malformed page counts as a mismatch and fails the run).
    expect(targets["ours"]!.summary.status200).toBeGreaterThan(0);
    expect(targets["ours"]!.summary.status200).toBe(targets["ours"]!.summary.requests);
  });

  it("feed: every subscriber gets every creation in order, on both backends", { timeout: 90_000 }, async () => {
    // --smoke: 20 subscribers, 50 creations at 50/s. A missed, repeated or reordered event fails the run.
    const result = await runBench("feed", ["--scenario", "feed", "--backend", "sqlite,postgres"]);
    const feed = result["feed"] as Record<
      string,
      {
        listening: { subscribers: number; complete: number; eventsReceived: number; deliveryMs: { p99: number } };
        quiet: { created: number };
        checks: Array<{ bound: string; pass: boolean }>;
      }
    >;
    expect(Object.keys(feed).sort()).toEqual(["ours[backend=postgres]", "ours[backend=sqlite]"]);
    for (const { listening, quiet, checks } of Object.values(feed)) {
      expect(quiet.created).toBe(50);
      expect(listening.complete).toBe(20);
      expect(listening.eventsReceived).toBe(20 * 50);
      expect(listening.deliveryMs.p99).toBeGreaterThan(0);
      expect(checks.length).toBe(4);
    }
  });

  it("soak: reports every interval with its RSS", { timeout: 90_000 }, async () => {
    const result = await runBench("soak", ["--scenario", "soak", "--duration", "3", "--rate", "100"]);
    // wrk holds no fixed rate: the soak chooses autocannon by itself.
    expect(result.options.loadGenerator).toBe("autocannon");
    const soak = result["soak"] as { targetRatePerSec: number; intervals: Array<{ rssMb: number; status200: number }> };
    expect(soak.targetRatePerSec).toBe(100);
    expect(soak.intervals.length).toBeGreaterThanOrEqual(2);
    for (const interval of soak.intervals) expect(interval.rssMb).toBeGreaterThan(0);
    expect(soak.intervals.reduce((total, i) => total + i.status200, 0)).toBeGreaterThan(0);
  });
});
