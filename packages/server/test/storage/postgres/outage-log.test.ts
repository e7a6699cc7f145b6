import { eventually } from "@plantstore/test-support/eventually";
import { afterEach, describe, expect, it } from "vitest";

import { databaseBehindProxy } from "../../support/database-behind-proxy.ts";
import { rawRequest } from "../../support/harness.ts";
import { type CreationLoad, startCreationLoad, startServerProcess } from "../../support/processes.ts";

const TOKEN = "outage-log-token-0123456789abcdefghijk";
// How many failed requests the outage lasts for: enough that a line per request would be obvious.
const FAILURES = Number(process.env["PLANTSTORE_TEST_OUTAGE_FAILURES"] ?? 600);
const CLIENTS = 32;

const ok = (load: CreationLoad) => load.answers.filter(({ answer }) => answer.status === 200).length;
const failed = (load: CreationLoad) => load.answers.length - ok(load);

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe("the log during a PostgreSQL outage under load", () => {
  it("writes a few error lines per kind of failure, not one (with three stacks) per failed request", async () => {
    const { proxy, url, dispose } = await databaseBehindProxy();
    cleanups.push(dispose);
    const server = await startServerProcess({
      DATABASE_URL: url,
      PLANTSTORE_TOKENS: TOKEN,
      PLANTSTORE_PG_POOL_SIZE: "6",
      PLANTSTORE_PG_CONNECT_TIMEOUT_MS: "1000",
      PLANTSTORE_PG_QUERY_TIMEOUT_MS: "2000",
    });
    cleanups.push(() => server.stop());
    const load = startCreationLoad(server, TOKEN, { clients: CLIENTS, retryPauseMs: 10 });
    let outageLog: string;
    try {
      await eventually(() => ok(load) >= 100, { what: "some 200s before the outage", timeoutMs: 20_000 });
      const before = server.output().length;
      const failedBefore = failed(load);
      proxy.refuse();
      await eventually(() => failed(load) - failedBefore >= FAILURES, {
        what: `${FAILURES} failed requests`,
        timeoutMs: 120_000,
      });
      proxy.pass();
      await eventually(async () => (await rawRequest(server.url, { method: "GET", path: "/readyz" })).status === 200, {
        what: "readyz 200 after the outage",
        timeoutMs: 10_000,
      });
      await load.stop();
      // A stop writes the counts of repeats still held for the current interval.
      await server.stop();
      outageLog = server.output().slice(before);
    } finally {
      await load.stop();
    }
    const lines = outageLog
      .split("\n")
      .filter((l) => l.startsWith("{"))
      .map((l) => ({
        bytes: l.length + 1,
        line: JSON.parse(l) as { level: number; msg: string; status?: number; repeats?: number },
      }));
    const errors = lines.filter(({ line }) => line.level >= 50);
    const requestFailed = errors.filter(({ line }) => line.msg.startsWith("request failed"));
    const errorBytes = errors.reduce((sum, { bytes }) => sum + bytes, 0);
    const summary = `${requestFailed.length} "request failed" lines, ${errorBytes} bytes of error lines, for ${failed(load)} failed requests`;
    expect(requestFailed.length, summary).toBeGreaterThan(0);
    // A few kinds (refused, terminated, timed out), each at most one full line and one count per 10 s.
    expect(requestFailed.length, summary).toBeLessThanOrEqual(20);
    expect(errorBytes, summary).toBeLessThan(64 * 1024);
    // The counts add up: every failure is either logged or counted.
    const counted = requestFailed.reduce((sum, { line }) => sum + (line.repeats ?? 1), 0);
    expect(counted, summary).toBeGreaterThanOrEqual(FAILURES);

    // The outage's access lines (every one a 503) are bounded the same way, and their counts add up too.
    const unavailable = lines.filter(({ line }) => line.status === 503);
    const accessSummary = `${unavailable.length} access lines for 503s, for ${failed(load)} failed requests`;
    expect(unavailable.length, accessSummary).toBeLessThanOrEqual(20);
    const answered = unavailable.reduce((sum, { line }) => sum + (line.repeats ?? 1), 0);
    expect(answered, accessSummary).toBeGreaterThanOrEqual(FAILURES);
    // Every request carried the bearer token, and PostgreSQL's failures are 503s where SQLite's
    // closed store gives 500s (auth/secrets-never-leak.test.ts, SQLite pass): no line names it.
    expect(server.output()).not.toContain(TOKEN);
  }, 180_000);
});
