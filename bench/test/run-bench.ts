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
 * Runs `pnpm bench --smoke` as a process, expects exit 0, and returns its JSON result. `--out` is
 * given relative, as a user types it: it must land where pnpm says `pnpm bench` was typed
 * (INIT_CWD), not in bench/, where pnpm runs the script.
 */
export async function runBench(name: string, args: string[]): Promise<Result> {
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
    return result;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
