import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

/**
 * One process against several: runs the benchmark twice with the same options, first with one
 * server process, then with `--processes N` (PLANTSTORE_WORKERS=N: N processes sharing the port,
 * each with its own connections to the one database), and prints both with their ratio.
 *
 *   pnpm --filter @plantstore/bench scale --backend postgres --processes 2 [any pnpm bench option]
 *
 * The two runs follow each other rather than alternate, so compare them on a quiet machine.
 */
const BENCH = fileURLToPath(new URL("./bench.ts", import.meta.url));

type Report = {
  ok: boolean;
  targets: Record<string, { summary: { requestsPerSecMean: number; latencyMs?: { p99?: number } } }>;
};

async function run(args: string[], out: string): Promise<Report> {
  const child = spawn(process.execPath, [BENCH, ...args, "--out", out], { stdio: "inherit" });
  const [code] = (await once(child, "exit")) as [number | null];
  if (code !== 0) throw new Error(`bench ${args.join(" ")} exited ${code}`);
  return JSON.parse(readFileSync(out, "utf8")) as Report;
}

const argv = process.argv.slice(2);
const at = argv.indexOf("--processes");
const processes = at === -1 ? 2 : Number(argv[at + 1]);
if (!Number.isInteger(processes) || processes < 2) {
  process.stderr.write("scale: --processes must be an integer >= 2\n");
  process.exit(2);
}
const passThrough = argv.filter((_, i) => i !== at && i !== at + 1);
if (passThrough.includes("--workers") || passThrough.includes("--out")) {
  process.stderr.write("scale: --workers and --out are set by scale itself\n");
  process.exit(2);
}

const dir = mkdtempSync(join(tmpdir(), "plantstore-scale-"));
try {
  const one = await run(passThrough, join(dir, "one.json"));
  const many = await run([...passThrough, "--workers", String(processes)], join(dir, "many.json"));
  const rps = (r: Report) => r.targets["ours"]!.summary.requestsPerSecMean;
  process.stdout.write(
    [
      "",
      `ours, 1 process:   ${Math.round(rps(one)).toLocaleString("en-US")} req/s`,
      `ours, ${processes} processes: ${Math.round(rps(many)).toLocaleString("en-US")} req/s`,
      `${processes} processes / 1 process: ${(rps(many) / rps(one)).toFixed(2)}`,
      "",
    ].join("\n"),
  );
} finally {
  rmSync(dir, { recursive: true, force: true });
}
