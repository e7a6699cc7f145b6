import { execFileSync, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

import { type CpuPlan, pinnedCommand, ticksPerSecond } from "./cpu.ts";
import { LatencyHistogram } from "./histogram.ts";
import type { LoadJob, LoadResult } from "./load.ts";
import { currentETags } from "./scenarios.ts";

const SCRIPT = fileURLToPath(new URL("../lua/plants.lua", import.meta.url));
const ENSURE_WRK = fileURLToPath(new URL("../../scripts/wrk.sh", import.meta.url));
const ENOUGH = /^plantstore-wrk-enough$/m;
const RESULT_LINE = /^plantstore-wrk-result (\{.*\})$/m;
/** wrk counts an answer slower than this as a timeout; autocannon's default, so both fail alike. */
const TIMEOUT = "10s";
/** wrk stops on its own clock; with --requests the script ends it, so the clock only has to outlast that. */
const NO_CLOCK_SEC = 24 * 3600;
const TAIL_CHARS = 4_000;

/** What plants.lua prints in done(). */
type WrkOutput = {
  durationUs: number;
  requests: number;
  status200: number;
  non2xx: number;
  mismatches: number;
  connectErrors: number;
  readErrors: number;
  writeErrors: number;
  timeouts: number;
  /** wrk's CPU (user + system, all threads) when done() started, in clock ticks; -1 without /proc. */
  cpuTicks: number;
  maxUs: number;
  meanUs: number;
  /** latency:percentile(p) for p = 0.1, 0.2, … 100, in µs. */
  percentilesUs: number[];
};

/** Installs Debian's wrk when /usr/bin/wrk is missing (scripts/wrk.sh, quiet unless it fails). */
export function ensureWrk(): void {
  try {
    execFileSync("bash", [ENSURE_WRK], { stdio: ["ignore", "ignore", "inherit"] });
  } catch {
    throw new Error("wrk is missing and could not be installed (above); or run with --load-generator autocannon");
  }
}

/**
 * One load job under wrk (one thread, so one core, as autocannon's process has): the requests come
 * from lua/plants.lua, the same ones scenarios.ts builds for autocannon. wrk reads statuses and,
 * for a PATCH, the answer's id and ETag; it does not compare bodies (autocannon does).
 */
export async function runWrk(plan: CpuPlan, job: LoadJob): Promise<LoadResult> {
  if (job.rate !== undefined || job.intervalSec !== undefined)
    throw new Error("wrk has no fixed request rate or intervals: this scenario runs autocannon");
  const dir = mkdtempSync(join(tmpdir(), "plantstore-wrk-"));
  try {
    const { spec } = job;
    const seed = String(1 + Math.floor(Math.random() * 2 ** 31));
    let args: string[];
    if (spec.kind === "insert") args = [String(spec.ids), String(spec.idBase)];
    else if (spec.kind === "read") args = [String(spec.maxId)];
    else if (spec.kind === "list") args = [String(spec.limit), String(spec.maxAfter)];
    else {
      const etags = join(dir, "etags");
      const plants = await currentETags(job.url, job.token, spec.plants);
      writeFileSync(etags, plants.map((p) => `${p.id} ${p.etag}\n`).join(""));
      args = [etags];
    }
    if (job.amount !== undefined) args.push(String(job.amount));
    const seconds = job.amount === undefined ? job.durationSec : NO_CLOCK_SEC;
    const [command, commandArgs] = pinnedCommand(plan, plan.load, "wrk", [
      ...["-t1", `-c${job.connections}`, `-d${seconds}s`, "--timeout", TIMEOUT, "-s", SCRIPT, job.url],
      ...["--", spec.kind, job.token, seed, ...args],
    ]);
    const output = await run(command, commandArgs);
    const json = RESULT_LINE.exec(output)?.[1];
    if (json === undefined) throw new Error(`wrk printed no result:\n${output.slice(-TAIL_CHARS)}`);
    return toLoadResult(JSON.parse(json) as WrkOutput);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function run(command: string, args: string[]): Promise<string> {
  const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => {
    output += chunk.toString("utf8");
    // plants.lua has seen --requests answers: SIGINT ends wrk's sleep through -d, and it reports.
    if (ENOUGH.test(output)) child.kill("SIGINT");
  });
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
  const [code, signal] = (await Promise.race([
    once(child, "exit"),
    once(child, "error").then(([error]) => {
      throw error as Error;
    }),
  ])) as [number | null, string | null];
  if (code !== 0) throw new Error(`wrk exited with ${signal ?? code}:\n${output.slice(-TAIL_CHARS)}`);
  return output;
}

function toLoadResult(wrk: WrkOutput): LoadResult {
  // wrk keeps an exact µs histogram but hands Lua only percentiles (and a raw-value accessor that
  // walks the whole histogram per call). So the histogram is rebuilt from the 1,000 percentiles
  // p0.1 … p100: the requests ranked between two of them are counted at the upper one. Rounds
  // merge as autocannon's do; each percentile is off by at most the gap to the next 0.1 percentile
  // (none at p50, p90, p99, p99.9 or the max, which are among the points), and always upward.
  const latency = new LatencyHistogram();
  const n = wrk.requests;
  const points = wrk.percentilesUs.length;
  wrk.percentilesUs.forEach((us, i) => {
    const count = Math.round((n * (i + 1)) / points) - Math.round((n * i) / points);
    if (count > 0) latency.record(us / 1000, count);
  });
  // wrk's exact mean and maximum, where the rebuilt histogram has its upper approximations.
  latency.sumUs = wrk.meanUs * latency.count;
  latency.maxUs = wrk.maxUs;
  const durationSec = wrk.durationUs / 1e6;
  return {
    durationSec,
    requests: n,
    requestsPerSec: n / durationSec,
    status200: wrk.status200,
    non2xx: wrk.non2xx,
    errors: wrk.connectErrors + wrk.readErrors + wrk.writeErrors + wrk.timeouts,
    timeouts: wrk.timeouts,
    mismatches: wrk.mismatches,
    latency: latency.toData(),
    latencyMs: latency.summary(),
    // Up to the start of done(): its percentile walks are reporting, not load.
    clientCpuSec: wrk.cpuTicks < 0 ? 0 : wrk.cpuTicks / ticksPerSecond(),
  };
}
