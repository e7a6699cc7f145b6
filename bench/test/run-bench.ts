import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import { expect } from "vitest";

const BENCH = fileURLToPath(new URL("../src/bench.ts", import.meta.url));

export type Summary = { requests: number; status200: number; serverCpuUsPerRequest: number };
export type Result = Record<string, unknown> & { ok: boolean; options: { loadGenerator: string } };

/**
 * Runs `pnpm bench --smoke` as a process, expects exit 0 and a passing result, and returns the
 * JSON result with what the run printed. `--out` is given relative, as a user types it: it must
 * land where pnpm says `pnpm bench` was typed (INIT_CWD), not in bench/, where pnpm runs the script.
 */
export async function runBenchWithOutput(name: string, args: string[]): Promise<{ result: Result; output: string }> {
  const dir = mkdtempSync(join(tmpdir(), "plantstore-bench-test-"));
  try {
    const child = spawn(process.execPath, [BENCH, "--smoke", ...args, "--out", `${name}.json`], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, INIT_CWD: dir },
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const [code] = (await once(child, "exit")) as [number | null];
    expect(code, output).toBe(0);
    const result = JSON.parse(readFileSync(join(dir, `${name}.json`), "utf8")) as Result;
    expect(result.ok, output).toBe(true);
    return { result, output };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `runBenchWithOutput`'s result alone. */
export async function runBench(name: string, args: string[]): Promise<Result> {
  return (await runBenchWithOutput(name, args)).result;
}

/** The run's targets, each checked to have answered some requests and nothing but 200s. */
export function targetsAnsweringOnly200(result: Result): Record<string, { summary: Summary }> {
  const targets = result["targets"] as Record<string, { summary: Summary }>;
  for (const [name, { summary }] of Object.entries(targets)) {
    expect(summary.requests, name).toBeGreaterThan(0);
    expect(summary.status200, name).toBe(summary.requests);
  }
  return targets;
}

/**
 * A by-id scenario (`read`, `update`) under `generator`: ours, its durable floor and the baseline
 * each answered only 200s, and the run reports ours against the floor.
 */
export async function expectByIdRun(scenario: "read" | "update", generator: "autocannon" | "wrk"): Promise<void> {
  const result = await runBench(scenario, ["--scenario", scenario, "--load-generator", generator]);
  expect(result.options.loadGenerator).toBe(generator);
  const targets = targetsAnsweringOnly200(result);
  expect(Object.keys(targets).sort()).toEqual(["baseline", "floor", "ours"]);
  const ratios = result["ratios"] as Array<{ name: string; against: string }>;
  expect(ratios.map((r) => `${r.name} / ${r.against}`)).toContain("ours / floor");
}
