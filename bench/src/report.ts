import { LatencyHistogram, type LatencySummary } from "./histogram.ts";
import type { LoadResult } from "./load.ts";

export type RoundResult = LoadResult & {
  round: number;
  /** Highest RSS of the server's process tree sampled during the round. */
  maxRssBytes: number;
  /** CPU seconds the server's process tree used during the round (all threads). */
  serverCpuSec: number;
  /** CPU seconds per thread name of the server's main process (main thread vs SQLite writer etc.). */
  serverThreadsCpuSec: Record<string, number>;
  /** Share of the machine's CPU time used by processes other than the server, load generator and harness. */
  othersCpuShare: number;
};

export type TargetReport = {
  /** The CPUs the server was pinned to, or null when unpinned. */
  cpus: number[] | null;
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
    /** Percentiles over every measured request of every round (merged histograms). */
    latencyMs: LatencySummary;
    /** Server CPU time per answered request: robust to a busy machine, unlike req/s. */
    serverCpuUsPerRequest: number;
    /** Load generator CPU over the rounds' wall time: near 1 means it was the limit. */
    clientCpuShare: number;
    othersCpuShareMean: number;
    /** Highest RSS sampled under load, and the kernel's high-water mark (VmHWM, start-up included). */
    peakRssMb: number;
    vmHwmMb: number;
  };
};

const mean = (values: number[]) => (values.length === 0 ? 0 : values.reduce((a, b) => a + b, 0) / values.length);
const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
const mb = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;

export function summarize(
  cpus: number[] | null,
  warmup: LoadResult | null,
  rounds: RoundResult[],
  vmHwmBytes: number,
): TargetReport {
  const latency = new LatencyHistogram();
  for (const round of rounds) latency.add(round.latency);
  const requests = sum(rounds.map((r) => r.requests));
  const wall = sum(rounds.map((r) => r.durationSec));
  return {
    cpus,
    warmup,
    rounds,
    summary: {
      requestsPerSecMean: mean(rounds.map((r) => r.requestsPerSec)),
      requestsPerSecByRound: rounds.map((r) => r.requestsPerSec),
      requests,
      status200: sum(rounds.map((r) => r.status200)),
      non2xx: sum(rounds.map((r) => r.non2xx)),
      errors: sum(rounds.map((r) => r.errors)),
      mismatches: sum(rounds.map((r) => r.mismatches)),
      latencyMs: latency.summary(),
      serverCpuUsPerRequest: requests === 0 ? 0 : (sum(rounds.map((r) => r.serverCpuSec)) / requests) * 1e6,
      clientCpuShare: wall === 0 ? 0 : sum(rounds.map((r) => r.clientCpuSec)) / wall,
      othersCpuShareMean: mean(rounds.map((r) => r.othersCpuShare)),
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
    for (const [label, run] of runs) failures.push(...runFailures(`${name} ${label}`, run));
    if (report.summary.status200 === 0) failures.push(`${name}: answered no 200 in the measured rounds`);
  }
  return failures;
}

export function runFailures(
  label: string,
  run: Pick<LoadResult, "errors" | "timeouts" | "non2xx" | "mismatches">,
): string[] {
  const failures: string[] = [];
  if (run.errors > 0) failures.push(`${label}: ${run.errors} connection errors (${run.timeouts} timeouts)`);
  if (run.non2xx > 0) failures.push(`${label}: ${run.non2xx} non-2xx responses`);
  if (run.mismatches > 0) failures.push(`${label}: ${run.mismatches} responses with an unexpected body`);
  return failures;
}

export type Ratio = { name: string; against: string; requestsPerSec: number; p99: number };

/**
 * Each of our targets against the baseline, and against the first of ours when there are several;
 * with floors (`[target, floor]` pairs), each target with a floor against it too.
 */
export function ratios(
  targets: Record<string, TargetReport>,
  floors: ReadonlyArray<readonly [string, string]> = [],
): Ratio[] {
  const result: Ratio[] = [];
  const floorNames = new Set(floors.map(([, floor]) => floor));
  const ours = Object.keys(targets).filter((name) => name !== "baseline" && !floorNames.has(name));
  const compare = (name: string, against: string) => {
    const a = targets[name]!.summary;
    const b = targets[against]!.summary;
    result.push({
      name,
      against,
      requestsPerSec: b.requestsPerSecMean === 0 ? 0 : a.requestsPerSecMean / b.requestsPerSecMean,
      p99: b.latencyMs.p99 === 0 ? 0 : a.latencyMs.p99 / b.latencyMs.p99,
    });
  };
  if (targets["baseline"] !== undefined) for (const name of [...ours, ...floorNames]) compare(name, "baseline");
  for (const [name, floor] of floors)
    if (targets[name] !== undefined && targets[floor] !== undefined) compare(name, floor);
  for (const name of ours.slice(1)) compare(name, ours[0]!);
  return result;
}

const int = (n: number) => Math.round(n).toLocaleString("en-US");
const ms = (n: number) => (n >= 100 ? n.toFixed(0) : n.toFixed(2));
const pct = (share: number) => `${Math.round(share * 100)}%`;

export function formatTable(header: string[], rows: string[][], textColumns: number[]): string {
  const table = [header, ...rows];
  const widths = header.map((_, col) => Math.max(...table.map((row) => (row[col] ?? "").length)));
  // Text columns left-aligned, numbers right-aligned, as a reader scans them.
  const line = (row: string[]) =>
    row
      .map((cell, col) => (textColumns.includes(col) ? cell.padEnd(widths[col]!) : cell.padStart(widths[col]!)))
      .join("  ")
      .trimEnd();
  return [line(header), ...rows.map(line)].join("\n");
}

/** A plain-text table, one line per target, plus the ratio lines. */
export function formatTargets(
  targets: Record<string, TargetReport>,
  floors: ReadonlyArray<readonly [string, string]> = [],
): string {
  const header = [
    "target",
    "req/s mean",
    "req/s by round",
    "p50 ms",
    "p99 ms",
    "max ms",
    "200s",
    "errors",
    "non-2xx",
    "CPU µs/req",
    "load gen CPU",
    "others' CPU",
    "peak RSS MB",
    "pinned to",
  ];
  const rows = Object.entries(targets).map(([name, { cpus, summary: s }]) => [
    name,
    int(s.requestsPerSecMean),
    s.requestsPerSecByRound.map(int).join(" / "),
    ms(s.latencyMs.p50),
    ms(s.latencyMs.p99),
    ms(s.latencyMs.max),
    int(s.status200),
    int(s.errors + s.mismatches),
    int(s.non2xx),
    int(s.serverCpuUsPerRequest),
    pct(s.clientCpuShare),
    pct(s.othersCpuShareMean),
    `${s.peakRssMb} (hwm ${s.vmHwmMb})`,
    cpus === null ? "-" : `cpu ${cpus.join(",")}`,
  ]);
  const lines = [formatTable(header, rows, [0, 2, 13]), ""];
  const all = ratios(targets, floors);
  const line = (r: Ratio) => `${r.name} / ${r.against}: req/s ${r.requestsPerSec.toFixed(3)}, p99 ${r.p99.toFixed(2)}x`;
  // A target with a floor: its ratio to the floor first, the one to the baseline beside it, on one line.
  const shown = new Set<Ratio>();
  for (const [name, floor] of floors) {
    const toFloor = all.find((r) => r.name === name && r.against === floor);
    if (toFloor === undefined) continue;
    const toBaseline = all.find((r) => r.name === name && r.against === "baseline");
    shown.add(toFloor);
    if (toBaseline !== undefined) shown.add(toBaseline);
    lines.push(toBaseline === undefined ? line(toFloor) : `${line(toFloor)}   ${line(toBaseline)}`);
  }
  for (const r of all) if (!shown.has(r)) lines.push(line(r));
  return lines.join("\n");
}
