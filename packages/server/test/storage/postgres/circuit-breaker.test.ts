import { eventually } from "@plantstore/test-support/eventually";
import { afterEach, describe, expect, it } from "vitest";

import { databaseBehindProxy } from "../../support/database-behind-proxy.ts";
import { rawRequest } from "../../support/harness.ts";
import { type ServerProcess, startCreationLoad, startServerProcess } from "../../support/processes.ts";

const TOKEN = "breaker-token-0123456789abcdefghijklmn";
// Small timeouts so the circuit trips in about a second (with the defaults, 5 s: the connect
// timeout, which is how long a request waits for a pooled connection while every one is stuck).
const CONNECT_TIMEOUT_MS = 500;
const QUERY_TIMEOUT_MS = 1_000;
const FAILURES = 3;
/**
 * Timeouts longer than any test here: a request that waits on the frozen database for them gets
 * no answer within the test, however slow the machine. So an answer that comes while the database
 * is still frozen did not wait on it: "at once", checked without a clock.
 */
const NEVER_MS = 300_000;

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function scrape(server: ServerProcess): Promise<string> {
  const metrics = await rawRequest(server.url, {
    method: "GET",
    path: "/metrics",
    headers: { authorization: `Bearer ${TOKEN}` },
  });
  return metrics.text;
}

async function circuitOpen(server: ServerProcess): Promise<boolean> {
  return /plantstore_dependency_circuit_open\{dependency="postgres"\} 1/.test(await scrape(server));
}

/**
 * The server's own count of answered `POST /plants`, in total and within 100 ms (its request
 * duration histogram's `le="0.1"` bucket): the time from the request's start to its answer's last
 * byte, measured where the answer is made.
 */
async function createsAnswered(server: ServerProcess): Promise<{ all: number; within100ms: number }> {
  const lines = (await scrape(server)).split("\n");
  const bucket = (le: string) => {
    const line = lines.find(
      (l) =>
        l.startsWith("plantstore_http_request_duration_seconds_bucket{") &&
        l.includes(`le="${le}"`) &&
        l.includes('route="/plants"') &&
        l.includes('method="POST"'),
    );
    return Number(line?.split(" ").at(-1));
  };
  return { all: bucket("+Inf"), within100ms: bucket("0.1") };
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

describe("PostgreSQL frozen under load (silent, not refusing): the circuit breaker", () => {
  it("opens after PLANTSTORE_PG_BREAKER_FAILURES timeouts, answers 503 with Retry-After while open, serves 200 within 2 s of the thaw, and loses no answered plant", async ({
    annotate,
  }) => {
    const { database, proxy, url, dispose } = await databaseBehindProxy();
    cleanups.push(dispose);
    const server = await startServerProcess({
      DATABASE_URL: url,
      PLANTSTORE_TOKENS: TOKEN,
      PLANTSTORE_METRICS: "token",
      PLANTSTORE_PG_POOL_SIZE: "6",
      PLANTSTORE_PG_CONNECT_TIMEOUT_MS: String(CONNECT_TIMEOUT_MS),
      PLANTSTORE_PG_QUERY_TIMEOUT_MS: String(QUERY_TIMEOUT_MS),
      PLANTSTORE_PG_BREAKER_FAILURES: String(FAILURES),
    });
    cleanups.push(() => server.stop());
    expect(await circuitOpen(server)).toBe(false);
    const load = startCreationLoad(server, TOKEN, { retryPauseMs: 20 });
    let openAt = 0;
    let thawedAt = 0;
    let answeredAtOpen: Awaited<ReturnType<typeof createsAnswered>> | undefined;
    let answeredWhileOpen: Awaited<ReturnType<typeof createsAnswered>> | undefined;
    try {
      await eventually(() => load.answers.filter((a) => a.answer.status === 200).length >= 50, {
        what: "200s before",
        timeoutMs: 20_000,
      });
      proxy.freeze();
      await eventually(() => circuitOpen(server), { what: "the circuit to open", timeoutMs: 10_000 });
      openAt = Date.now();
      answeredAtOpen = await createsAnswered(server);
      // Opened by FAILURES timeouts in a row (the connect timeouts of requests waiting for a pooled
      // connection, about a second here), not by the stalled-statement probe, which needs a
      // statement running 2 s and then a probe's 1 s: said by the log, not by timing the opening.
      await eventually(
        () =>
          server
            .output()
            .includes(`PostgreSQL circuit open: it stopped answering (${FAILURES} timeouts or refusals in a row)`),
        {
          what: "the opening logged as FAILURES timeouts in a row",
        },
      );
      // Enough refusals to read a p99 from, all sent after the circuit was seen open.
      await eventually(() => load.answers.filter((a) => a.answer.startedAt >= openAt).length >= 300, {
        what: "answers while the circuit is open",
        timeoutMs: 20_000,
      });
      answeredWhileOpen = await createsAnswered(server);
      const ready = await rawRequest(server.url, { method: "GET", path: "/readyz" });
      expect(ready.status).toBe(503);
      proxy.pass();
      thawedAt = Date.now();
      await eventually(() => load.answers.some((a) => a.answer.status === 200 && a.answer.startedAt >= thawedAt), {
        what: "a 200 within 2 s of the thaw",
        timeoutMs: 2_000,
      });
    } finally {
      await load.stop();
    }

    const whileOpen = load.answers.filter((a) => a.answer.startedAt >= openAt && a.answer.startedAt < thawedAt);
    expect(whileOpen.length).toBeGreaterThanOrEqual(300);
    for (const { answer } of whileOpen) {
      // A request sent just before the thaw that a loaded machine only served after it may have
      // met the closed circuit: a 200 then, never before the thaw.
      if (answer.status === 200) {
        expect(answer.startedAt + answer.ms).toBeGreaterThanOrEqual(thawedAt);
        continue;
      }
      expect(answer.status, answer.text).toBe(503);
      expect(JSON.parse(answer.text)).toEqual({ error: 50300, message: expect.any(String) });
      expect(answer.retryAfter).toBe("1");
    }
    // How long the refusals took depends on the machine's load (the share the server's own clock
    // saw under 100 ms was 0.975 in one loaded run, and this process's p99 holds its own scheduling
    // delays), so both are reported beside the result, not bounded; that they waited on nothing is
    // the next test's.
    const refusals = {
      all: answeredWhileOpen.all - answeredAtOpen.all,
      within100ms: answeredWhileOpen.within100ms - answeredAtOpen.within100ms,
    };
    expect(refusals.all).toBeGreaterThanOrEqual(300);
    const clientP99 = percentile(
      whileOpen.map((a) => a.answer.ms),
      99,
    );
    await annotate(
      `refusals while open under 100 ms on the server's clock: ${refusals.within100ms} of ${refusals.all}; p99 of ${whileOpen.length} seen by the test: ${clientP99} ms`,
    );

    // Every answer is a 200 or the catalogued 503; every 200 is stored, whenever it was sent.
    for (const { answer } of load.answers) {
      if (answer.status === 200) continue;
      expect(answer.status, answer.text).toBe(503);
      expect(JSON.parse(answer.text)).toEqual({ error: 50300, message: expect.any(String) });
    }
    const ok = load.answers.filter((a) => a.answer.status === 200).map((a) => a.id);
    const stored = new Set(
      (await database.rows<{ id: bigint }>({ sqlite: "", postgres: "SELECT id FROM plants" })).map((r) => Number(r.id)),
    );
    const missing = ok.filter((id) => !stored.has(id));
    expect(missing, `answered 200 but not stored: ${missing.slice(0, 10).join(", ")}`).toEqual([]);
    expect(await circuitOpen(server)).toBe(false);
    // The log comes through the child's stdout, which may arrive after its HTTP answers.
    await eventually(() => server.output().includes("PostgreSQL circuit closed"), { what: "the closing logged" });
    expect(server.child.exitCode).toBeNull();
  }, 60_000);

  it("answers the requests caught in flight by the freeze once the circuit opens, and every later one at once, not after the timeouts", async () => {
    // Timeouts longer than the test (NEVER_MS): the circuit opens without them, because a statement
    // stalled and a probe got no answer (about 3.5 s after the freeze).
    const { proxy, url, dispose } = await databaseBehindProxy();
    cleanups.push(dispose);
    const server = await startServerProcess({
      DATABASE_URL: url,
      PLANTSTORE_TOKENS: TOKEN,
      PLANTSTORE_METRICS: "token",
      PLANTSTORE_PG_POOL_SIZE: "6",
      PLANTSTORE_PG_CONNECT_TIMEOUT_MS: String(NEVER_MS),
      PLANTSTORE_PG_QUERY_TIMEOUT_MS: String(NEVER_MS),
    });
    cleanups.push(() => server.stop());
    const load = startCreationLoad(server, TOKEN, { retryPauseMs: 20 });
    try {
      await eventually(() => load.answers.filter((a) => a.answer.status === 200).length >= 50, {
        what: "200s before",
        timeoutMs: 20_000,
      });
      proxy.freeze();
      // A statement running 2 s makes the breaker probe; no answer within 1 s opens the circuit
      // (about 3.5 s after the freeze), and the callers of the hung statements are answered then.
      await eventually(() => circuitOpen(server), { what: "the circuit to open", timeoutMs: 20_000 });
      const openAt = Date.now();
      // Measured from the opening, not the freeze: requests whose statements had been answered
      // just before the freeze may still get their 200 after it (on a loaded machine, all of them),
      // while those sent after the freeze are caught by it as surely as those before.
      await eventually(() => !load.waitingSince(openAt), {
        what: "answers to the requests sent before the circuit opened",
        timeoutMs: 20_000,
      });
      const caught = load.answers.filter((a) => a.answer.startedAt < openAt && a.answer.status !== 200);
      expect(caught.length).toBeGreaterThan(0);
      for (const { answer } of caught)
        expect(JSON.parse(answer.text)).toEqual({ error: 50300, message: expect.any(String) });

      // At once while open: 300 refusals of requests sent after the opening, and /readyz, all
      // answered while the database is still frozen, so none of them waited on it (NEVER_MS).
      await eventually(() => load.answers.filter((a) => a.answer.startedAt >= openAt).length >= 300, {
        what: "answers while the circuit is open",
        timeoutMs: 20_000,
      });
      const ready = await rawRequest(server.url, { method: "GET", path: "/readyz" });
      expect(ready.status).toBe(503);
      const refused = load.answers.filter((a) => a.answer.startedAt >= openAt);
      expect(proxy.mode()).toBe("freeze");
      for (const { answer } of refused) {
        expect(answer.status, answer.text).toBe(503);
        expect(JSON.parse(answer.text)).toEqual({ error: 50300, message: expect.any(String) });
        expect(answer.retryAfter).toBe("1");
      }
    } finally {
      proxy.pass();
      await load.stop();
    }
  }, 60_000);
});
