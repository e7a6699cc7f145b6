import autocannon from "autocannon";

export type LoadOptions = {
  url: string;
  token: string;
  connections: number;
  durationSec: number;
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
  /** 2xx answers whose body was not the expected plant. */
  mismatches: number;
  latencyMs: { p50: number; p99: number; max: number; mean: number };
};

export const EXPECTED_BODY = '{"name":"Fern","tag":"fern"}';

// One counter for the whole process: ids stay unique across targets, warm-up and rounds, so our
// server never sees a repeated id and answers a replay (cheaper, and not what we mean to measure).
let nextId = 1;

export async function runLoad(options: LoadOptions): Promise<LoadResult> {
  const result = await autocannon({
    url: options.url,
    connections: options.connections,
    duration: options.durationSec,
    method: "POST",
    headers: { authorization: `Bearer ${options.token}`, "content-type": "application/json" },
    // expectBody is refused together with `requests`; verifyBody does the same check.
    verifyBody: (body) => body === EXPECTED_BODY,
    requests: [
      {
        path: "/plants",
        // Called for every request (a request with setupRequest is rebuilt each time it is sent).
        setupRequest: (request) => {
          request.body = `{"id":${nextId++},"name":"Fern","tag":"fern"}`;
          return request;
        },
      },
    ],
  });
  const requests = result.requests.total;
  return {
    durationSec: result.duration,
    requests,
    requestsPerSec: requests / result.duration,
    status200: Number(result.statusCodeStats?.["200"]?.count ?? 0),
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    mismatches: result.mismatches,
    latencyMs: {
      p50: result.latency.p50,
      p99: result.latency.p99,
      max: result.latency.max,
      mean: result.latency.average,
    },
  };
}
