import { Agent, get, type IncomingMessage, request } from "node:http";

import { LatencyHistogram, type LatencySummary } from "./histogram.ts";
import { PLANT_NAME, PLANT_TAG } from "./scenarios.ts";

/**
 * The feed scenario's client side, as its own process (pinned to the load CPU like the load
 * generator), so 1,000 streams are parsed off the server's core: it opens the subscribers
 * (raw SSE over node:http), creates plants at a fixed rate, and checks that every subscriber got
 * every creation, in order, and how late. Creating here too keeps the answer times on the same
 * clock as the arrivals.
 */
export type FeedJob = {
  jobId: number;
  url: string;
  token: string;
  /** 0: creations only (the create path without listeners). */
  subscribers: number;
  plants: number;
  /** Creations per second, sent on a fixed schedule whatever the answers do (open loop). */
  rate: number;
  idBase: number;
  /** How long subscribers may still take after the last creation was answered. */
  settleMs: number;
};

export type FeedResult = {
  subscribers: number;
  /** Time to open every stream and read its opening position. */
  connectMs: number;
  plants: number;
  created: number;
  createFailures: number;
  /** Creations per second actually sent and answered (against `rate`). */
  createRate: number;
  createLatencyMs: LatencySummary;
  /** Subscribers that received exactly positions start+1 … start+plants, all plant.created, then nothing else. */
  complete: number;
  /** What went wrong for the first few that did not (a gap, a repeat, an early end). */
  problems: string[];
  eventsReceived: number;
  /** Arrival minus the creating request's answer (0 when the event came first). */
  deliveryMs: LatencySummary;
  /** Arrival minus the moment the creating request was sent: an upper bound of commit-to-delivery. */
  deliveryFromSendMs: LatencySummary;
  eventsBeforeAnswer: number;
  /** This process's CPU over the job, in cores: near 1 means its own lag is in the latencies. */
  clientCpu: number;
};

export type FeedMessage =
  | { type: "ready" }
  | { type: "connected"; jobId: number }
  | { type: "done"; jobId: number; result: FeedResult }
  | { type: "failed"; jobId: number; error: string };

const send = (message: FeedMessage) => process.send!(message);
const now = () => performance.now();

type Subscriber = {
  start: number;
  expected: number;
  count: number;
  problem: string | undefined;
  response: IncomingMessage | undefined;
};

async function runJob(job: FeedJob): Promise<FeedResult> {
  const cpuBefore = process.cpuUsage();
  const wallBefore = now();
  const auth = { authorization: `Bearer ${job.token}` };
  const sentAt = new Float64Array(job.plants);
  const answeredAt = new Float64Array(job.plants);
  const delivery = new LatencyHistogram();
  const deliveryFromSend = new LatencyHistogram();
  let eventsReceived = 0;
  let eventsBeforeAnswer = 0;
  let complete = 0;
  let allDelivered: () => void = () => {};
  const delivered = new Promise<void>((resolve) => (allDelivered = resolve));

  // One event, already cut at its blank line: cheap string scanning, no general SSE parser.
  const onEvent = (s: Subscriber, frame: string, at: number) => {
    if (frame.startsWith("retry:") || frame.startsWith(":")) return;
    if (!frame.startsWith("id: ")) return fail(s, `unexpected frame ${JSON.stringify(frame.slice(0, 80))}`);
    const idEnd = frame.indexOf("\n");
    const position = Number(frame.slice(4, idEnd === -1 ? undefined : idEnd));
    if (idEnd === -1) {
      // The opening `id: <start>` with no event.
      s.start = position;
      s.expected = position + 1;
      return;
    }
    if (position !== s.expected)
      return fail(s, `position ${position} where ${s.expected} was due (start ${s.start}, ${s.count} received)`);
    if (!frame.startsWith("event: plant.created\n", idEnd + 1)) return fail(s, `not a creation at ${position}`);
    const idAt = frame.indexOf('"id":', idEnd);
    const index = Number.parseInt(frame.slice(idAt + 5, idAt + 30), 10) - job.idBase;
    if (!(index >= 0 && index < job.plants)) return fail(s, `a plant this job did not create at ${position}`);
    s.expected++;
    s.count++;
    eventsReceived++;
    const answered = answeredAt[index]!;
    if (answered === 0) eventsBeforeAnswer++;
    delivery.record(answered === 0 ? 0 : Math.max(0, at - answered));
    deliveryFromSend.record(at - sentAt[index]!);
    if (s.count === job.plants) {
      complete++;
      if (complete === job.subscribers) allDelivered();
    }
  };
  const fail = (s: Subscriber, why: string) => {
    if (s.problem === undefined) s.problem = why;
    s.response?.destroy();
  };

  const subscribers: Subscriber[] = [];
  const connectStarted = now();
  const open = () =>
    new Promise<void>((resolve, reject) => {
      const s: Subscriber = { start: -1, expected: -1, count: 0, problem: undefined, response: undefined };
      subscribers.push(s);
      // agent: false, one socket per stream, as 1,000 separate clients would have.
      const req = get(`${job.url}/plants/events`, { agent: false, headers: auth }, (res) => {
        if (res.statusCode !== 200) {
          res.resume();
          reject(new Error(`GET /plants/events answered ${res.statusCode}`));
          return;
        }
        s.response = res;
        res.setEncoding("utf8");
        let buffer = "";
        res.on("data", (chunk: string) => {
          const at = now();
          buffer += chunk;
          let from = 0;
          for (let end = buffer.indexOf("\n\n"); end !== -1; end = buffer.indexOf("\n\n", from)) {
            onEvent(s, buffer.slice(from, end), at);
            from = end + 2;
          }
          buffer = buffer.slice(from);
          if (s.start !== -1) resolve();
        });
        res.on("close", () => {
          if (s.count < job.plants && s.problem === undefined)
            s.problem = `the stream ended after ${s.count} of ${job.plants} events`;
          reject(new Error(s.problem));
        });
      });
      req.on("error", reject);
    });
  // A few hundred connects at a time: the server's accept backlog takes the rest in turn.
  for (let i = 0; i < job.subscribers; i += 200) {
    await Promise.all(Array.from({ length: Math.min(200, job.subscribers - i) }, open));
  }
  const connectMs = now() - connectStarted;
  if (job.subscribers > 0) send({ type: "connected", jobId: job.jobId });

  const agent = new Agent({ keepAlive: true, maxSockets: 16 });
  const createLatency = new LatencyHistogram();
  let created = 0;
  let createFailures = 0;
  let answered = 0;
  let lastAnswer = 0;
  const createStarted = now();
  await new Promise<void>((resolve) => {
    const create = (index: number) => {
      const body = `{"id":${job.idBase + index},"name":"${PLANT_NAME}","tag":"${PLANT_TAG}"}`;
      sentAt[index] = now();
      const req = request(
        `${job.url}/plants`,
        { method: "POST", agent, headers: { ...auth, "content-type": "application/json" } },
        (res) => {
          res.resume();
          res.on("end", () => {
            const at = now();
            answeredAt[index] = at;
            createLatency.record(at - sentAt[index]!);
            if (res.statusCode === 200) created++;
            else createFailures++;
            done(at);
          });
        },
      );
      req.on("error", () => {
        createFailures++;
        done(now());
      });
      req.end(body);
    };
    const done = (at: number) => {
      lastAnswer = at;
      if (++answered === job.plants) resolve();
    };
    let next = 0;
    // On a fixed schedule: plant i leaves at i / rate, however slow the answers (no coordinated omission).
    const tick = () => {
      const due = Math.min(job.plants, Math.floor(((now() - createStarted) / 1000) * job.rate) + 1);
      while (next < due) create(next++);
      if (next === job.plants) clearInterval(timer);
    };
    const timer = setInterval(tick, 5);
    tick();
  });
  agent.destroy();

  if (job.subscribers > 0) {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([delivered, new Promise<void>((resolve) => (timer = setTimeout(resolve, job.settleMs)))]);
    clearTimeout(timer);
  }
  const problems = subscribers.filter((s) => s.count !== job.plants || s.problem !== undefined);
  for (const s of subscribers) {
    s.response?.removeAllListeners("close");
    s.response?.destroy();
  }
  const cpu = process.cpuUsage(cpuBefore);
  return {
    subscribers: job.subscribers,
    connectMs: Math.round(connectMs),
    plants: job.plants,
    created,
    createFailures,
    createRate: answered / ((lastAnswer - createStarted) / 1000),
    createLatencyMs: createLatency.summary(),
    complete: job.subscribers - problems.length,
    problems: problems
      .slice(0, 5)
      .map((s) => s.problem ?? `${s.count} of ${job.plants} events within ${job.settleMs} ms of the last creation`),
    eventsReceived,
    deliveryMs: delivery.summary(),
    deliveryFromSendMs: deliveryFromSend.summary(),
    eventsBeforeAnswer,
    clientCpu: (cpu.user + cpu.system) / 1e3 / (now() - wallBefore),
  };
}

process.on("message", (job: FeedJob) => {
  runJob(job).then(
    (result) => send({ type: "done", jobId: job.jobId, result }),
    (error: unknown) =>
      send({ type: "failed", jobId: job.jobId, error: error instanceof Error ? error.message : String(error) }),
  );
});
// The harness going away (even killed) closes the IPC channel: go with it.
process.on("disconnect", () => process.exit(0));
send({ type: "ready" });
