import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";

import { type CpuPlan, pinnedCommand } from "./cpu.ts";
import type { HistogramData, LatencySummary } from "./histogram.ts";
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
  readonly #child: ChildProcess;
  #nextJobId = 1;
  #exited: string | undefined;

  private constructor(child: ChildProcess) {
    this.#child = child;
    child.on("exit", (code, signal) => (this.#exited = `the load generator exited with ${signal ?? code}`));
  }

  static async start(plan: CpuPlan): Promise<LoadGenerator> {
    const [command, args] = pinnedCommand(plan, plan.load, process.execPath, [LOAD_PROCESS]);
    const child = spawn(command, args, { stdio: ["ignore", "inherit", "inherit", "ipc"] });
    const [message] = (await Promise.race([
      once(child, "message"),
      once(child, "exit").then(() => {
        throw new Error("the load generator exited before it was ready");
      }),
    ])) as [LoadMessage];
    if (message.type !== "ready") throw new Error(`the load generator said ${message.type} first`);
    return new LoadGenerator(child);
  }

  run(job: Omit<LoadJob, "jobId">, onInterval?: (report: IntervalReport) => void): Promise<LoadResult> {
    if (this.#exited !== undefined) return Promise.reject(new Error(this.#exited));
    const jobId = this.#nextJobId++;
    return new Promise((resolve, reject) => {
      const onMessage = (message: LoadMessage) => {
        if (message.type === "interval" && message.jobId === jobId) onInterval?.(message);
        if ((message.type === "done" || message.type === "failed") && message.jobId === jobId) {
          settle();
          if (message.type === "done") resolve(message.result);
          else reject(new Error(`load generator: ${message.error}`));
        }
      };
      const onExit = () => {
        settle();
        reject(new Error(this.#exited ?? "the load generator exited"));
      };
      const settle = () => {
        this.#child.off("message", onMessage);
        this.#child.off("exit", onExit);
      };
      this.#child.on("message", onMessage);
      this.#child.once("exit", onExit);
      this.#child.send({ ...job, jobId } satisfies LoadJob);
    });
  }

  async stop(): Promise<void> {
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) return;
    const exited = once(this.#child, "exit");
    this.#child.disconnect();
    const timer = setTimeout(() => this.#child.kill("SIGKILL"), 5_000);
    await exited;
    clearTimeout(timer);
  }
}
