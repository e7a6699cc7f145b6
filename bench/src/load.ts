import { fileURLToPath } from "node:url";

import type { CpuPlan } from "./cpu.ts";
import type { HistogramData, LatencySummary } from "./histogram.ts";
import { JobProcess } from "./job-process.ts";
import type { RequestSpec } from "./scenarios.ts";

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

/** One autocannon run against one target, reduced to the numbers we report. */
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
  /** 2xx answers whose body was not the expected one. */
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

/** The load process, started once per run (pinned to the load CPU) and given one job at a time. */
export class LoadGenerator {
  readonly #process: JobProcess<LoadJob, LoadMessage, LoadResult>;

  private constructor(jobs: JobProcess<LoadJob, LoadMessage, LoadResult>) {
    this.#process = jobs;
  }

  static async start(plan: CpuPlan): Promise<LoadGenerator> {
    return new LoadGenerator(await JobProcess.start(plan, LOAD_PROCESS, "load generator"));
  }

  run(job: Omit<LoadJob, "jobId">, onInterval?: (report: IntervalReport) => void): Promise<LoadResult> {
    return this.#process.run(job, (message) => {
      if (message.type === "interval") onInterval?.(message);
    });
  }

  stop(): Promise<void> {
    return this.#process.stop();
  }
}
