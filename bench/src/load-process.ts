import type { EventEmitter } from "node:events";

import autocannon from "autocannon";

import { LatencyHistogram } from "./histogram.ts";
import type { LoadJob, LoadMessage, LoadResult } from "./load.ts";
import { prepareRequest } from "./scenarios.ts";

/**
 * The load generator, as its own process (pinned to its own CPU by the harness), so it never
 * shares an event loop or a core with the server it measures. It runs one autocannon job at a
 * time on request over IPC and reports per interval and at the end.
 */
function send(message: LoadMessage): void {
  process.send!(message);
}

async function runJob(job: LoadJob): Promise<LoadResult> {
  const built = await prepareRequest(job.spec, job.url, job.token);
  const headers: Record<string, string> = { authorization: `Bearer ${job.token}` };
  if (built.contentType !== undefined) headers["content-type"] = built.contentType;
  // Answers checked against their own request (checkResponse), beside autocannon's own mismatches.
  let failedChecks = 0;
  const total = new LatencyHistogram();
  const interval = new LatencyHistogram();
  let intervalCounts = { responses: 0, status200: 0, non2xx: 0, errors: 0, mismatches: 0 };
  const startedAt = Date.now();
  const cpuBefore = process.cpuUsage();

  return new Promise((resolve, reject) => {
    const instance = autocannon(
      {
        url: job.url,
        connections: job.connections,
        ...(job.amount === undefined ? { duration: job.durationSec } : { amount: job.amount }),
        ...(job.rate === undefined ? {} : { overallRate: job.rate }),
        method: built.method,
        headers,
        // expectBody is refused together with `requests`; verifyBody does the same check.
        verifyBody: built.verifyBody,
        requests: [
          {
            method: built.method,
            path: built.path,
            setupRequest: (request, context) => built.setupRequest(request, context as Record<string, unknown>),
            ...(built.checkResponse === undefined
              ? {}
              : {
                  onResponse: (status, body, context, responseHeaders) => {
                    const ok = built.checkResponse!(
                      status,
                      body,
                      context as Record<string, unknown>,
                      responseHeaders ?? {},
                    );
                    // Another status is counted as such already.
                    if (ok || status < 200 || status > 299) return;
                    failedChecks++;
                    intervalCounts.mismatches++;
                  },
                }),
          },
        ],
      },
      (error, result) => {
        if (timer !== undefined) {
          clearInterval(timer);
          // The remainder after the last full interval, so the intervals add up to the whole run.
          if (intervalCounts.responses + intervalCounts.errors > 0) reportInterval();
        }
        if (error) {
          reject(error instanceof Error ? error : new Error(String(error)));
          return;
        }
        const cpu = process.cpuUsage(cpuBefore);
        const requests = result.requests.total;
        resolve({
          durationSec: result.duration,
          requests,
          requestsPerSec: requests / result.duration,
          status200: Number(result.statusCodeStats?.["200"]?.count ?? 0),
          non2xx: result.non2xx,
          errors: result.errors,
          timeouts: result.timeouts,
          mismatches: result.mismatches + failedChecks,
          latency: total.toData(),
          latencyMs: total.summary(),
          clientCpuSec: (cpu.user + cpu.system) / 1e6,
        });
      },
    );
    instance.on("response", (_client: unknown, statusCode: number, _bytes: number, responseTimeMs: number) => {
      total.record(responseTimeMs);
      interval.record(responseTimeMs);
      intervalCounts.responses++;
      if (statusCode === 200) intervalCounts.status200++;
      else if (statusCode < 200 || statusCode > 299) intervalCounts.non2xx++;
    });
    // Emitted by autocannon's tracker, though missing from its type definitions.
    const events = instance as unknown as EventEmitter;
    events.on("reqError", () => intervalCounts.errors++);
    events.on("reqMismatch", () => intervalCounts.mismatches++);
    const reportInterval = () => {
      send({
        type: "interval",
        jobId: job.jobId,
        atSec: (Date.now() - startedAt) / 1000,
        ...intervalCounts,
        latencyMs: interval.summary(),
      });
      intervalCounts = { responses: 0, status200: 0, non2xx: 0, errors: 0, mismatches: 0 };
      interval.reset();
    };
    const timer = job.intervalSec === undefined ? undefined : setInterval(reportInterval, job.intervalSec * 1000);
  });
}

process.on("message", (job: LoadJob) => {
  runJob(job).then(
    (result) => send({ type: "done", jobId: job.jobId, result }),
    (error: unknown) =>
      send({ type: "failed", jobId: job.jobId, error: error instanceof Error ? error.message : String(error) }),
  );
});
// The harness going away (even killed) closes the IPC channel: go with it.
process.on("disconnect", () => process.exit(0));
send({ type: "ready" });
