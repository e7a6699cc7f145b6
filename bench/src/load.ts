import { fileURLToPath } from "node:url";

import type { CpuPlan } from "./cpu.ts";
import type { HistogramData, LatencySummary } from "./histogram.ts";
import { JobProcess } from "./job-process.ts";
import type { RequestSpec } from "./scenarios.ts";
import { runWrk } from "./wrk-runner.ts";

const LOAD_PROCESS = fileURLToPath(new URL("./load-process.ts", import.meta.url));

export type LoadJob = {
  jobId: number;
  url: string;
  token: string;
  connections: number;
  /** Seconds of load; ignored when `amount` is set. */
  durationSec: number;
  /** Stop after this many responses instead of after a duration. */
  amount?: number;
  /** Requests per second over all connections (open-ish loop, for the soak); unset means as fast as answered. */
  rate?: number;
  /** Report counts and latency every this many seconds (the soak's intervals). */
  intervalSec?: number;
  spec: RequestSpec;
};

/** One load run (wrk or autocannon) against one target, reduced to the numbers we report. */
export type LoadResult = {
  durationSec: number;
  /** Completed responses, whatever their status. */
  requests: number;
  requestsPerSec: number;
  status200: number;
  non2xx: number;
  /** Connection errors, timeouts included. */
  errors: number;
  timeouts: number;
  /** 2xx answers whose body was not the expected one (wrk checks a PATCH's id and ETag only). */
  mismatches: number;
  latency: HistogramData;
  latencyMs: LatencySummary;
  /** CPU the load generator itself used: near one core's worth means it, not the server, was the limit. */
  clientCpuSec: number;
};

export type IntervalReport = {
  jobId: number;
  atSec: number;
  responses: number;
  status200: number;
  non2xx: number;
  errors: number;
  mismatches: number;
  latencyMs: LatencySummary;
};

export type LoadMessage =
  | { type: "ready" }
  | ({ type: "interval" } & IntervalReport)
  | { type: "done"; jobId: number; result: LoadResult }
  | { type: "failed"; jobId: number; error: string };

/**
 * `wrk` (the default: it spends a fraction of autocannon's CPU per request) or `autocannon` (it
 * checks every body, and holds a fixed rate, which the soak needs).
 */
export type LoadGeneratorName = "wrk" | "autocannon";

/**
 * The load generator of a run. autocannon runs in the load process, started once per run (pinned
 * to the load CPU) and given one job at a time; wrk is a process of its own per job, pinned alike.
 */
export class LoadGenerator {
  readonly #plan: CpuPlan;
  readonly #process: JobProcess<LoadJob, LoadMessage, LoadResult> | undefined;
  #nextJobId = 1;

  private constructor(plan: CpuPlan, jobs: JobProcess<LoadJob, LoadMessage, LoadResult> | undefined) {
    this.#plan = plan;
    this.#process = jobs;
  }

  static async start(plan: CpuPlan, name: LoadGeneratorName): Promise<LoadGenerator> {
    if (name === "wrk") return new LoadGenerator(plan, undefined);
    return new LoadGenerator(plan, await JobProcess.start(plan, LOAD_PROCESS, "load generator"));
  }

  run(job: Omit<LoadJob, "jobId">, onInterval?: (report: IntervalReport) => void): Promise<LoadResult> {
    if (this.#process === undefined) return runWrk(this.#plan, { ...job, jobId: this.#nextJobId++ });
    return this.#process.run(job, (message) => {
      if (message.type === "interval") onInterval?.(message);
    });
  }

  async stop(): Promise<void> {
    await this.#process?.stop();
  }
}
