import { machineBusySeconds, threadCpuSeconds, treeCpuSeconds } from "./cpu.ts";
import type { IntervalReport, LoadGenerator, LoadJob, LoadResult } from "./load.ts";
import type { RoundResult } from "./report.ts";
import { sampleRss, type Target } from "./target.ts";

/**
 * Runs one load job against one target and records, around it, what the target and the machine
 * did: the server's CPU time (all its processes and threads), its RSS, and how busy everything
 * else on the machine was. The CPU time per request is the number that survives a noisy machine.
 */
export async function measuredRun(
  load: LoadGenerator,
  target: Target,
  everyone: Target[],
  job: Omit<LoadJob, "jobId">,
  onInterval?: (report: IntervalReport) => void,
): Promise<Omit<RoundResult, "round">> {
  const cpuOf = (t: Target) => treeCpuSeconds(t.pid);
  const serverBefore = cpuOf(target);
  const threadsBefore = threadCpuSeconds(target.pid);
  const everyoneBefore = everyone.map(cpuOf);
  const machineBefore = machineBusySeconds();
  const selfBefore = process.cpuUsage();
  const wallBefore = performance.now();
  const sampler = sampleRss(target.pid);
  let result: LoadResult;
  let maxRss: number;
  try {
    result = await load.run(job, onInterval);
  } finally {
    ({ maxRss } = sampler.stop());
  }
  const wallSec = (performance.now() - wallBefore) / 1000;
  const serverCpuSec = cpuOf(target) - serverBefore;
  const targetsCpu = everyone.map(cpuOf).reduce((total, cpu, i) => total + cpu - everyoneBefore[i]!, 0);
  const self = process.cpuUsage(selfBefore);
  const machineAfter = machineBusySeconds();
  const others =
    machineAfter.busy - machineBefore.busy - targetsCpu - result.clientCpuSec - (self.user + self.system) / 1e6;
  const threadsAfter = threadCpuSeconds(target.pid);
  const serverThreadsCpuSec = Object.fromEntries(
    Object.entries(threadsAfter).map(([name, cpu]) => [
      name,
      Math.round((cpu - (threadsBefore[name] ?? 0)) * 1000) / 1000,
    ]),
  );
  target.assertAlive();
  return {
    ...result,
    maxRssBytes: maxRss,
    serverCpuSec,
    serverThreadsCpuSec,
    othersCpuShare: Math.max(0, others / (wallSec * machineAfter.cpus)),
  };
}
