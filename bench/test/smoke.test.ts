import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import { afterAll, describe, expect, it } from "vitest";

const BENCH = fileURLToPath(new URL("../src/bench.ts", import.meta.url));
const dir = mkdtempSync(join(tmpdir(), "plantstore-bench-test-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

type Summary = { requests: number; status200: number; serverCpuUsPerRequest: number };
type Result = Record<string, unknown> & { ok: boolean; options: { loadGenerator: string } };

/**
 * Runs the harness as a process, expects exit 0, and returns its JSON result. `--out` is given
 * relative, as a user types it: it must land where pnpm says `pnpm bench` was typed (INIT_CWD),
 * not in bench/, where pnpm runs the script.
 */
async function runBench(name: string, args: string[]): Promise<Result> {
  const out = join(dir, `${name}.json`);
  const child = spawn(process.execPath, [BENCH, "--smoke", ...args, "--out", `${name}.json`], {
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, INIT_CWD: dir },
  });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const [code] = (await once(child, "exit")) as [number | null];
  expect(code, output).toBe(0);
  const result = JSON.parse(readFileSync(out, "utf8")) as Result;
  expect(result.ok, output).toBe(true);
  return result;
}

// Proves the harness runs end to end against the built server, in every scenario; speed is never
// asserted, as it depends on the machine and whatever else runs on it. wrk, the default load
// generator, counts statuses only (and a PATCH's id and ETag); the tests whose point is the answers'
// bodies run autocannon, which compares every body. Under either, an insert run also checks that
// every creation answered 200 is a plant in the store (a run that fails it exits 1).
// Concurrent: each is mostly waiting on start-up and its 1 s rounds, and none asserts a speed.
describe.concurrent("pnpm bench --smoke (the harness, as a process)", () => {
  it(
    "insert: measures the baseline and each variant, here an empty and a prefilled store",
    { timeout: 90_000 },
    async () => {
      const result = await runBench("insert", ["--prefill", "0,500"]);
      expect(result.options.loadGenerator).toBe("wrk");
      const targets = result["targets"] as Record<string, { summary: Summary }>;
      expect(Object.keys(targets).sort()).toEqual(["baseline", "ours[prefill=0]", "ours[prefill=500]"]);
      for (const { summary } of Object.values(targets)) {
        expect(summary.requests).toBeGreaterThan(0);
        expect(summary.status200).toBe(summary.requests);
      }
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
      const targets = result["targets"] as Record<string, { summary: Summary }>;
      expect(Object.keys(targets).sort()).toEqual([
        "baseline",
        "floor[backend=postgres]",
        "floor[backend=sqlite]",
        "ours[backend=postgres]",
        "ours[backend=sqlite]",
      ]);
      for (const { summary } of Object.values(targets)) {
        expect(summary.requests).toBeGreaterThan(0);
        expect(summary.status200).toBe(summary.requests);
      }
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
      const targets = result["targets"] as Record<string, { summary: Summary }>;
      expect(Object.keys(targets).sort()).toEqual(["baseline", "compare-1", "compare-2", "floor", "ours"]);
      // Each answered every request with the interface's body (any other body counts as a mismatch and fails the run).
      for (const { summary } of Object.values(targets)) {
        expect(summary.requests).toBeGreaterThan(0);
        expect(summary.status200).toBe(summary.requests);
      }
    },
  );

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

// After the others, one at a time: each starts three servers and prefills two stores, load the five
// above should not have to share in their 1 s rounds.
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
      const targets = result["targets"] as Record<string, { summary: Summary }>;
      expect(Object.keys(targets).sort()).toEqual(["baseline", "floor", "ours"]);
      for (const { summary } of Object.values(targets)) {
        expect(summary.status200).toBeGreaterThan(0);
        expect(summary.status200).toBe(summary.requests);
      }
      const ratios = result["ratios"] as Array<{ name: string; against: string }>;
      expect(ratios.map((r) => `${r.name} / ${r.against}`)).toContain("ours / floor");
    },
  );
});
