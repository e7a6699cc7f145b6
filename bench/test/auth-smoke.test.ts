import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import { describe, expect, it } from "vitest";

const BENCH = fileURLToPath(new URL("../src/bench.ts", import.meta.url));

// The harness with --auth: a third target, authenticated another way, answering only 200s.
// Speed is never asserted.
describe("pnpm bench --smoke --auth", () => {
  it.each([["opaque"], ["jwt"]])(
    "--auth %s measures a third target beside ours and reports their ratio",
    { timeout: 120_000 },
    async (auth) => {
      const dir = mkdtempSync(join(tmpdir(), "plantstore-bench-auth-"));
      const out = join(dir, "result.json");
      try {
        const child = spawn(process.execPath, [BENCH, "--smoke", "--auth", auth, "--out", out], {
          stdio: ["ignore", "pipe", "pipe"],
        });
        let output = "";
        child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
        child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
        const [code] = (await once(child, "exit")) as [number | null];
        expect(code, output).toBe(0);
        expect(output).toMatch(new RegExp(`ours-${auth}/ours \\(static token\\) req/s: \\d`));
        const result = JSON.parse(readFileSync(out, "utf8")) as {
          ok: boolean;
          ratio: { authVsStatic?: number };
          targets: Record<string, { summary: { requests: number; status200: number } }>;
        };
        expect(result.ok).toBe(true);
        expect(Object.keys(result.targets).sort()).toEqual(["baseline", "ours", `ours-${auth}`]);
        expect(result.ratio.authVsStatic).toBeGreaterThan(0);
        const summary = result.targets[`ours-${auth}`]!.summary;
        expect(summary.requests).toBeGreaterThan(0);
        expect(summary.status200).toBe(summary.requests);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
