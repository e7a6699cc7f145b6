import { treeCpuSeconds } from "./cpu.ts";
import type { LoadGenerator, LoadJob, LoadResult } from "./load.ts";
import { measuredRun } from "./measure.ts";
import type { BenchOptions } from "./options.ts";
import { formatTable, runFailures } from "./report.ts";
import { readRss, type Target } from "./target.ts";

type SoakInterval = {
  /** Seconds since the soak started, at the end of this interval. */
  atSec: number;
  requestsPerSec: number;
  p99Ms: number;
  status200: number;
  errors: number;
  non2xx: number;
  mismatches: number;
  rssMb: number;
  /** Server CPU over the interval, in cores (1 = one core busy). */
  serverCpu: number;
};

export type SoakReport = {
  /** The closed-loop maximum measured first (null when --rate was given). */
  measuredMaxPerSec: number | null;
  targetRatePerSec: number;
  intervals: SoakInterval[];
  summary: {
    requestsPerSecMean: number;
    requestsPerSecMin: number;
    requestsPerSecMax: number;
    /** Standard deviation over mean of the per-interval rates: the stability figure. */
    requestsPerSecCv: number;
    errors: number;
    non2xx: number;
    mismatches: number;
    latencyMs: LoadResult["latencyMs"];
    rssStartMb: number;
    rssEndMb: number;
    rssMaxMb: number;
    /** Least-squares slope of RSS over all intervals, and over the second half (after warm-up effects). */
    rssSlopeMbPerMin: number;
    rssSlopeSecondHalfMbPerMin: number;
  };
};

const mb = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;

/** Least-squares slope of y over x. */
function slope(points: Array<[number, number]>): number {
  const n = points.length;
  if (n < 2) return 0;
  const mx = points.reduce((a, [x]) => a + x, 0) / n;
  const my = points.reduce((a, [, y]) => a + y, 0) / n;
  let num = 0;
  let den = 0;
  for (const [x, y] of points) {
    num += (x - mx) * (y - my);
    den += (x - mx) ** 2;
  }
  return den === 0 ? 0 : num / den;
}

/**
 * A steady load at a fixed rate (by default a share of a maximum measured first) for minutes,
 * reported per interval: throughput, p99, errors, and RSS, whose trend shows a leak.
 * autocannon's rate is a budget per connection per second: each second starts with a burst
 * until the budget is spent, so p99 here reflects bursts rather than a perfectly even arrival.
 */
export async function runSoak(
  options: BenchOptions,
  load: LoadGenerator,
  target: Target,
  jobFor: (seconds: number, extra?: Partial<LoadJob>) => Omit<LoadJob, "jobId">,
  say: (line: string) => void,
): Promise<{ report: SoakReport; failures: string[]; table: string }> {
  const failures: string[] = [];
  let measuredMax: number | null = null;
  let rate = options.rate;
  if (rate === undefined) {
    const seconds = options.smoke ? 1 : 10;
    say(`soak: measuring the maximum for ${seconds} s`);
    const max = await load.run(jobFor(seconds));
    failures.push(...runFailures("soak calibration", max));
    measuredMax = max.requestsPerSec;
    rate = Math.max(1, Math.round(measuredMax * options.rateFraction));
    say(`soak: maximum ${Math.round(measuredMax)} req/s; soaking at ${rate} req/s (${options.rateFraction} of it)`);
  }

  const intervals: SoakInterval[] = [];
  let lastAt = 0;
  let lastCpu = treeCpuSeconds(target.pid);
  const rssStart = readRss(target.pid).rss;
  say(
    `soak: ${options.duration} s at ${rate} req/s, ${options.connections} connections, reported every ${options.interval} s`,
  );
  const result = await measuredRun(
    load,
    target,
    [target],
    jobFor(options.duration, { rate, intervalSec: options.interval }),
    (tick) => {
      const cpu = treeCpuSeconds(target.pid);
      const seconds = tick.atSec - lastAt;
      const interval: SoakInterval = {
        atSec: Math.round(tick.atSec * 10) / 10,
        requestsPerSec: Math.round(tick.responses / seconds),
        p99Ms: tick.latencyMs.p99,
        status200: tick.status200,
        errors: tick.errors,
        non2xx: tick.non2xx,
        mismatches: tick.mismatches,
        rssMb: mb(readRss(target.pid).rss),
        serverCpu: Math.round(((cpu - lastCpu) / seconds) * 100) / 100,
      };
      lastAt = tick.atSec;
      lastCpu = cpu;
      intervals.push(interval);
      say(
        `soak ${String(Math.round(interval.atSec)).padStart(4)} s: ${interval.requestsPerSec} req/s, p99 ${interval.p99Ms} ms, ` +
          `${interval.errors + interval.non2xx + interval.mismatches} bad, RSS ${interval.rssMb} MB, server CPU ${interval.serverCpu}`,
      );
    },
  );
  failures.push(...runFailures("soak", result));
  if (result.status200 === 0) failures.push("soak: no 200 answered");

  // The last interval is the remainder of the run (autocannon stops on its own 1 s tick): only
  // full-length intervals count for the rate figures.
  const full = intervals.filter((i, n) => i.atSec - (intervals[n - 1]?.atSec ?? 0) >= options.interval * 0.9);
  const rates = (full.length > 0 ? full : intervals).map((i) => i.requestsPerSec);
  const meanRate = rates.reduce((a, b) => a + b, 0) / Math.max(1, rates.length);
  const sd = Math.sqrt(rates.reduce((a, r) => a + (r - meanRate) ** 2, 0) / Math.max(1, rates.length));
  const rssPoints = intervals.map((i) => [i.atSec / 60, i.rssMb] as [number, number]);
  const report: SoakReport = {
    measuredMaxPerSec: measuredMax,
    targetRatePerSec: rate,
    intervals,
    summary: {
      requestsPerSecMean: Math.round(meanRate),
      requestsPerSecMin: Math.min(...rates),
      requestsPerSecMax: Math.max(...rates),
      requestsPerSecCv: meanRate === 0 ? 0 : Math.round((sd / meanRate) * 10_000) / 10_000,
      errors: result.errors,
      non2xx: result.non2xx,
      mismatches: result.mismatches,
      latencyMs: result.latencyMs,
      rssStartMb: mb(rssStart),
      rssEndMb: intervals.at(-1)?.rssMb ?? mb(rssStart),
      rssMaxMb: mb(result.maxRssBytes),
      rssSlopeMbPerMin: Math.round(slope(rssPoints) * 100) / 100,
      rssSlopeSecondHalfMbPerMin: Math.round(slope(rssPoints.slice(Math.floor(rssPoints.length / 2))) * 100) / 100,
    },
  };
  const s = report.summary;
  const table = [
    formatTable(
      ["at s", "req/s", "p99 ms", "200s", "errors", "non-2xx", "RSS MB", "server CPU"],
      intervals.map((i) => [
        String(Math.round(i.atSec)),
        String(i.requestsPerSec),
        i.p99Ms.toFixed(2),
        String(i.status200),
        String(i.errors + i.mismatches),
        String(i.non2xx),
        i.rssMb.toFixed(1),
        i.serverCpu.toFixed(2),
      ]),
      [],
    ),
    "",
    `target ${rate} req/s${measuredMax === null ? "" : ` (${options.rateFraction} x measured max ${Math.round(measuredMax)})`}; ` +
      `achieved mean ${s.requestsPerSecMean}, min ${s.requestsPerSecMin}, max ${s.requestsPerSecMax}, CV ${(s.requestsPerSecCv * 100).toFixed(2)}%`,
    `latency p50 ${s.latencyMs.p50} ms, p99 ${s.latencyMs.p99} ms, max ${s.latencyMs.max} ms; errors ${s.errors + s.mismatches}, non-2xx ${s.non2xx}`,
    `RSS ${s.rssStartMb} MB at start, ${s.rssEndMb} MB at end, ${s.rssMaxMb} MB max; ` +
      `slope ${s.rssSlopeMbPerMin} MB/min overall, ${s.rssSlopeSecondHalfMbPerMin} MB/min over the second half`,
  ].join("\n");
  return { report, failures, table };
}
