import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const BENCH = fileURLToPath(new URL("../src/bench.ts", import.meta.url));

type Summary = { requests: number; status200: number };

// Proves the harness runs end to end against the built server; speed is never asserted, as
// it depends on the machine and whatever else runs on it.
describe("pnpm bench --smoke (the harness, as a process)", () => {
  it("exits 0 and writes a result with both targets answering 200s", { timeout: 90_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), "plantstore-bench-test-"));
    const out = join(dir, "result.json");
    try {
      const child = spawn(process.execPath, [BENCH, "--smoke", "--out", out], { stdio: ["ignore", "pipe", "pipe"] });
      let output = "";
      child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
      child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
      const [code] = (await once(child, "exit")) as [number | null];
      expect(code, output).toBe(0);

      const result = JSON.parse(readFileSync(out, "utf8")) as {
        ok: boolean;
        targets: Record<string, { summary: Summary }>;
      };
      expect(result.ok).toBe(true);
      expect(Object.keys(result.targets).sort()).toEqual(["baseline", "ours"]);
      for (const { summary } of Object.values(result.targets)) {
        expect(summary.requests).toBeGreaterThan(0);
        expect(summary.status200).toBe(summary.requests);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
