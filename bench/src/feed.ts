import { readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

import { type CpuPlan, processTree, treeCpuSeconds } from "./cpu.ts";
import type { FeedJob, FeedMessage, FeedResult } from "./feed-process.ts";
import { JobProcess } from "./job-process.ts";
import type { BenchOptions } from "./options.ts";
import { ID_STRIDE } from "./scenarios.ts";
import { readRss, sampleRss, type Target } from "./target.ts";

const FEED_PROCESS = fileURLToPath(new URL("./feed-process.ts", import.meta.url));

/** The bounds for the feed (issue 27). */
const FEED_BOUNDS = { deliveryP99Ms: 100, memoryGrowthMb: 50 } as const;

type Phase = FeedResult & {
  serverCpuUsPerCreate: number;
  /** The server's CPU over the phase's creations, in cores: what it needed, or got on a busy machine. */
  serverCores: number;
  /** Of the same wall time, the share its threads waited runnable for a CPU (summed over threads). */
  serverRunQueueShare: number;
};

export type FeedTargetReport = {
  quiet: Phase;
  listening: Phase & { rssBeforeMb: number; rssPeakMb: number; rssAfterMb: number; memoryGrowthMb: number };
  /** The create path with the subscribers listening against without: p99 and server CPU per creation. */
  createP99Ratio: number;
  checks: Array<{ bound: string; value: string; pass: boolean }>;
};

/**
 * Seconds the server's threads spent runnable but waiting for a CPU (/proc/<pid>/task/<tid>/schedstat,
 * second field): high means the machine starved it, low with a stall means the stall is its own.
 */
function runQueueWaitSeconds(root: number): number {
  let ns = 0;
  for (const pid of processTree(root)) {
    try {
      for (const tid of readdirSync(`/proc/${pid}/task`)) {
        ns += Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, "utf8").split(" ")[1] ?? 0);
      }
    } catch {
      // A thread or process gone between listing and reading.
    }
  }
  return ns / 1e9;
}

const mb = (bytes: number) => Math.round((bytes / 1024 / 1024) * 10) / 10;

/** The feed's client process, pinned to the load CPU, given one job at a time. */
class FeedClient {
  readonly #process: JobProcess<FeedJob, FeedMessage, FeedResult>;

  private constructor(jobs: JobProcess<FeedJob, FeedMessage, FeedResult>) {
    this.#process = jobs;
  }

  static async start(plan: CpuPlan): Promise<FeedClient> {
    return new FeedClient(await JobProcess.start(plan, FEED_PROCESS, "feed client"));
  }

  run(job: Omit<FeedJob, "jobId">, onConnected?: () => void): Promise<FeedResult> {
    return this.#process.run(job, (message) => {
      if (message.type === "connected") onConnected?.();
    });
  }

  stop(): Promise<void> {
    return this.#process.stop();
  }
}

let idRuns = 0;

/**
 * The feed scenario against one of our servers: creations at `--rate` for `--duration` s with
 * nobody listening, then the same with `--subscribers` streams open on GET /plants/events. Every
 * subscriber must get every creation, in position order with no gap; the run fails otherwise.
 * Delivery p99 and the server's RSS growth are checked against the bounds.
 */
export async function runFeed(
  options: BenchOptions,
  target: Target,
  token: string,
  plan: CpuPlan,
  say: (line: string) => void,
): Promise<{ report: FeedTargetReport; failures: string[] }> {
  const client = await FeedClient.start(plan);
  try {
    const job = (subscribers: number, seconds: number): Omit<FeedJob, "jobId"> => ({
      url: target.url,
      token,
      subscribers,
      plants: Math.max(1, Math.round(options.rate! * seconds)),
      rate: options.rate!,
      // Far above the bench's other runs, so a creation is never answered as a replay.
      idBase: (500 + ++idRuns) * ID_STRIDE,
      settleMs: options.smoke ? 5_000 : 10_000,
    });
    const phase = async (subscribers: number, seconds: number, onConnected?: () => void): Promise<Phase> => {
      let cpuBefore = treeCpuSeconds(target.pid);
      let wallBefore = performance.now();
      let waitBefore = runQueueWaitSeconds(target.pid);
      const result = await client.run(job(subscribers, seconds), () => {
        // The creations' CPU, not the connects'.
        cpuBefore = treeCpuSeconds(target.pid);
        wallBefore = performance.now();
        waitBefore = runQueueWaitSeconds(target.pid);
        onConnected?.();
      });
      target.assertAlive();
      const cpu = treeCpuSeconds(target.pid) - cpuBefore;
      const wall = (performance.now() - wallBefore) / 1000;
      return {
        ...result,
        serverCpuUsPerCreate: Math.round((cpu / Math.max(1, result.plants)) * 1e6),
        serverCores: Math.round((cpu / wall) * 100) / 100,
        serverRunQueueShare: Math.round(((runQueueWaitSeconds(target.pid) - waitBefore) / wall) * 100) / 100,
      };
    };

    if (options.warmup > 0) {
      say(`feed ${target.name}: warm-up, ${options.rate} creations/s for ${options.warmup} s`);
      await phase(0, options.warmup);
    }
    say(`feed ${target.name}: ${options.rate} creations/s for ${options.duration} s, nobody listening`);
    const quiet = await phase(0, options.duration);
    const rssBefore = readRss(target.pid).rss;
    const sampler = sampleRss(target.pid);
    say(`feed ${target.name}: the same with ${options.subscribers} subscribers`);
    let listeningResult: Phase;
    let rssPeak: number;
    try {
      listeningResult = await phase(options.subscribers, options.duration, () =>
        say(`feed ${target.name}: ${options.subscribers} subscribers connected`),
      );
    } finally {
      ({ maxRss: rssPeak } = sampler.stop());
    }
    const rssAfter = readRss(target.pid).rss;
    const listening = {
      ...listeningResult,
      rssBeforeMb: mb(rssBefore),
      rssPeakMb: mb(rssPeak),
      rssAfterMb: mb(rssAfter),
      memoryGrowthMb: mb(rssPeak - rssBefore),
    };
    const allDelivered = listening.complete === listening.subscribers;
    const rateHeld = (p: Phase) => p.createRate >= 0.95 * options.rate!;
    const createP99Ratio =
      quiet.createLatencyMs.p99 === 0 ? 0 : listening.createLatencyMs.p99 / quiet.createLatencyMs.p99;
    const checks = [
      {
        bound: "every subscriber receives every event, in order",
        value: `${listening.complete} of ${listening.subscribers} complete (${listening.eventsReceived.toLocaleString("en-US")} events)`,
        pass: allDelivered,
      },
      {
        bound: `commit-to-delivery p99 <= ${FEED_BOUNDS.deliveryP99Ms} ms (from the creation's answer)`,
        value: `${listening.deliveryMs.p99} ms (from its sending: ${listening.deliveryFromSendMs.p99} ms)`,
        pass: allDelivered && listening.deliveryMs.p99 <= FEED_BOUNDS.deliveryP99Ms,
      },
      {
        bound: `server memory growth <= ${FEED_BOUNDS.memoryGrowthMb} MB`,
        value: `${listening.memoryGrowthMb} MB (RSS ${listening.rssBeforeMb} before, peak ${listening.rssPeakMb}, ${listening.rssAfterMb} after)`,
        pass: listening.memoryGrowthMb <= FEED_BOUNDS.memoryGrowthMb,
      },
      {
        bound: `creations hold ${options.rate}/s with and without subscribers`,
        value:
          `${Math.round(quiet.createRate)}/s p99 ${quiet.createLatencyMs.p99} ms ${quiet.serverCpuUsPerCreate} µs CPU/create without; ` +
          `${Math.round(listening.createRate)}/s p99 ${listening.createLatencyMs.p99} ms ${listening.serverCpuUsPerCreate} µs CPU/create with (p99 ${createP99Ratio.toFixed(2)}x)`,
        pass: rateHeld(quiet) && rateHeld(listening),
      },
    ];
    const failures: string[] = [];
    for (const p of [quiet, listening]) {
      if (p.createFailures > 0) failures.push(`${target.name}: ${p.createFailures} creations failed`);
    }
    // A missed, repeated or reordered event is a broken feed, not a slow machine: it fails the run.
    if (!allDelivered)
      failures.push(
        `${target.name}: ${listening.subscribers - listening.complete} subscribers missed events: ${listening.problems.join("; ")}`,
      );
    return { report: { quiet, listening, createP99Ratio, checks }, failures };
  } finally {
    await client.stop();
  }
}

export function formatFeed(reports: Record<string, FeedTargetReport>): string {
  const lines: string[] = [];
  for (const [name, report] of Object.entries(reports)) {
    lines.push(`${name}:`);
    for (const check of report.checks) lines.push(`  ${check.pass ? "PASS" : "FAIL"}  ${check.bound}: ${check.value}`);
    const l = report.listening;
    lines.push(
      `  subscribers connected in ${l.connectMs} ms; delivery p50 ${l.deliveryMs.p50} / p99 ${l.deliveryMs.p99} / max ${l.deliveryMs.max} ms; ` +
        `${l.eventsBeforeAnswer.toLocaleString("en-US")} events arrived before their creation's answer; ` +
        `server CPU ${report.quiet.serverCores} cores without, ${l.serverCores} with, ` +
        `waiting for a CPU ${Math.round(report.quiet.serverRunQueueShare * 100)}% / ${Math.round(l.serverRunQueueShare * 100)}% of the time; ` +
        `client process CPU ${Math.round(l.clientCpu * 100)}% (near 100%: its own lag is in the latencies)`,
    );
  }
  return lines.join("\n");
}
