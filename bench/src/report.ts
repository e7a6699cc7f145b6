import type { LoadResult } from "./load.ts";

export type RoundResult = LoadResult & { round: number; maxRssBytes: number };

export type TargetReport = {
  warmup: LoadResult | null;
  rounds: RoundResult[];
  summary: {
    requestsPerSecMean: number;
    requestsPerSecByRound: number[];
    requests: number;
    status200: number;
    non2xx: number;
    errors: number;
    mismatches: number;
    /** Mean of the rounds' percentiles (autocannon gives no mergeable histogram); max is the max. */
    latencyMs: { p50: number; p99: number; max: number };
    /** Highest RSS sampled under load, and the kernel's high-water mark (VmHWM, start-up included). */
    peakRssMb: number;
    vmHwmMb: number;
  };
};

const mean = (values: number[]) => (values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length);
const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
const mb = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;

export function summarize(warmup: LoadResult | null, rounds: RoundResult[], vmHwmBytes: number): TargetReport {
  return {
    warmup,
    rounds,
    summary: {
      requestsPerSecMean: mean(rounds.map((r) => r.requestsPerSec)),
      requestsPerSecByRound: rounds.map((r) => r.requestsPerSec),
      requests: sum(rounds.map((r) => r.requests)),
      status200: sum(rounds.map((r) => r.status200)),
      non2xx: sum(rounds.map((r) => r.non2xx)),
      errors: sum(rounds.map((r) => r.errors)),
      mismatches: sum(rounds.map((r) => r.mismatches)),
      latencyMs: {
        p50: mean(rounds.map((r) => r.latencyMs.p50)),
        p99: mean(rounds.map((r) => r.latencyMs.p99)),
        max: Math.max(0, ...rounds.map((r) => r.latencyMs.max)),
      },
      peakRssMb: mb(Math.max(0, ...rounds.map((r) => r.maxRssBytes))),
      vmHwmMb: mb(vmHwmBytes),
    },
  };
}

/** Every reason this run cannot be trusted; empty means the numbers measure what we meant. */
export function findFailures(targets: Record<string, TargetReport>): string[] {
  const failures: string[] = [];
  for (const [name, report] of Object.entries(targets)) {
    const runs: Array<[string, LoadResult]> = report.rounds.map((r) => [`round ${r.round}`, r]);
    if (report.warmup !== null) runs.unshift(["warm-up", report.warmup]);
    for (const [label, run] of runs) {
      if (run.errors > 0) failures.push(`${name} ${label}: ${run.errors} connection errors (${run.timeouts} timeouts)`);
      if (run.non2xx > 0) failures.push(`${name} ${label}: ${run.non2xx} non-2xx responses`);
      if (run.mismatches > 0) failures.push(`${name} ${label}: ${run.mismatches} responses with an unexpected body`);
    }
    if (report.summary.status200 === 0) failures.push(`${name}: answered no 200 in the measured rounds`);
  }
  return failures;
}

const int = (n: number) => Math.round(n).toLocaleString("en-US");
const ms = (n: number) => (n >= 100 ? n.toFixed(0) : n.toFixed(1));

/** A plain-text table, one line per target, plus the ratio line. */
export function formatTable(targets: Record<string, TargetReport>, ratio: number): string {
  const header = ["target", "req/s mean", "req/s by round", "p50 ms", "p99 ms", "max ms", "200s", "errors", "non-2xx", "peak RSS MB"];
  const rows = Object.entries(targets).map(([name, { summary: s }]) => [
    name,
    int(s.requestsPerSecMean),
    s.requestsPerSecByRound.map(int).join(" / "),
    ms(s.latencyMs.p50),
    ms(s.latencyMs.p99),
    ms(s.latencyMs.max),
    int(s.status200),
    int(s.errors + s.mismatches),
    int(s.non2xx),
    `${s.peakRssMb} (hwm ${s.vmHwmMb})`,
  ]);
  const table = [header, ...rows];
  const widths = header.map((_, col) => Math.max(...table.map((row) => row[col]!.length)));
  // Text columns left-aligned, numbers right-aligned, as a reader scans them.
  const line = (row: string[]) =>
    row.map((cell, col) => (col <= 0 || col === 2 ? cell.padEnd(widths[col]!) : cell.padStart(widths[col]!))).join("  ");
  return [line(header), ...rows.map(line), "", `ours/baseline req/s: ${ratio.toFixed(3)}`].join("\n");
}
