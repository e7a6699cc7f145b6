import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

import { eventually } from "@plantstore/test-support/eventually";
import { afterEach, describe, expect, it } from "vitest";

import { noteDatabase } from "../../src/cli/database-note.ts";
import { openWebhookAdmin } from "../../src/storage/open-store.ts";
import type { WebhookAdmin } from "../../src/storage/webhook-admin.ts";
import { startTestServer, type TestServer } from "../support/harness.ts";
import { SkippableClock } from "../support/skippable-clock.ts";
import { startReceiver } from "../support/webhook-receiver.ts";

const SECRET = `whsec_${Buffer.alloc(32, 9).toString("base64")}`;
const BIN = fileURLToPath(new URL("../../dist/bin.js", import.meta.url));
/** Far past any retry of these tests (40 ms base): once skipped, whatever was due has been sent. */
const DAY = 24 * 60 * 60 * 1000;

/** `plantstore-server webhooks <args>` on the server's database, as an operator runs it beside the server. */
function webhooksCli(
  server: TestServer,
  args: string[],
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, "webhooks", ...args, "--database-url", server.database.url], {
      stdio: ["ignore", "pipe", "pipe"],
      env: { ...process.env, PLANTSTORE_WEBHOOK_ALLOWED_HOSTS: "127.0.0.1", PLANTSTORE_LOG_LEVEL: "silent" },
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** What every `webhooks` command writes first on stderr: the database it opened (the server's, which exists). */
const openedLine = (server: TestServer) => `plantstore-server: ${noteDatabase(server.database.url).opened}\n`;

type DeliveryJson = {
  id: number;
  messageId: string;
  subscriberId: string;
  status: string;
  attempts: number;
  lastStatus: number | null;
  lastError: string | null;
};

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function storeWith(
  url: string,
  overrides: Parameters<typeof startTestServer>[0] = {},
  clock?: SkippableClock,
): Promise<TestServer> {
  const server = await startTestServer(
    { webhookAllowedHosts: ["127.0.0.1"], webhookRetryBaseMs: 40, ...overrides },
    { clock },
  );
  cleanups.push(() => server.close());
  const admin = await openWebhookAdmin(server.database.url);
  await admin.add(url, SECRET);
  await admin.close();
  return server;
}

async function admin(server: TestServer): Promise<WebhookAdmin> {
  const opened = await openWebhookAdmin(server.database.url);
  cleanups.push(() => opened.close());
  return opened;
}

/** The newest delivery, once its event has been delivered. */
async function newestDelivered(history: WebhookAdmin) {
  return eventually(
    async () => {
      const [newest] = await history.deliveries({ failedOnly: false, limit: 1 });
      return newest?.status === "delivered" && newest;
    },
    { what: "delivered" },
  );
}

describe("webhook targets given as a private IP literal", () => {
  it("are never contacted without the allow-list, though no DNS lookup is made for them", async () => {
    const receiver = await startReceiver(() => ({ status: 200 }));
    cleanups.push(receiver.close);
    // Stored behind the CLI's back (or allowed when added, and the allow-list changed since).
    const server = await storeWith(receiver.url, { webhookAllowedHosts: [] });
    await server.createRaw('{"id":1,"name":"a"}');
    const deliveries = await admin(server);
    await eventually(async () => (await deliveries.deliveries({ failedOnly: true, limit: 10 })).length === 1, {
      what: "a failed attempt",
    });
    expect((await deliveries.deliveries({ failedOnly: true, limit: 10 }))[0]!.lastError).toMatch(/non-public/);
    expect(receiver.received).toHaveLength(0);
  });
});

describe("the per-attempt timeout", () => {
  it("gives up on a receiver that does not answer in time, records why, and retries with the same webhook-id", async () => {
    const clock = new SkippableClock();
    const times: number[] = [];
    const receiver = await startReceiver((n) => {
      times.push(clock.now());
      return n === 1 ? "hang" : { status: 200 };
    });
    cleanups.push(receiver.close);
    // Long enough that only the clock's skips reach it, never the wall clock (nor Node's socket idleness).
    const timeoutMs = 60_000;
    const server = await storeWith(receiver.url, { webhookTimeoutMs: timeoutMs }, clock);
    await server.createRaw('{"id":2,"name":"slow"}');
    await eventually(() => receiver.received.length === 1, { what: "the first attempt" });
    // In one skip: a poll on its own would wait for the attempt under way, which only the deadline ends.
    await clock.skip(timeoutMs);
    await clock.skipUntil(() => receiver.received.length === 2, { what: "the retry after the timeout" });
    const [first, second] = receiver.received;
    expect(second!.headers["webhook-id"]).toBe(first!.headers["webhook-id"]);
    // Not before the timeout ran out, and soon after it.
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(timeoutMs);
    expect(times[1]! - times[0]!).toBeLessThan(timeoutMs + 8_000);
    const history = await admin(server);
    const delivery = await newestDelivered(history);
    expect(delivery).toMatchObject({ attempts: 2, lastStatus: 200 });
    expect(await history.attempts(delivery.id)).toEqual([
      expect.objectContaining({ statusCode: null, error: `no answer within ${timeoutMs} ms` }),
      expect.objectContaining({ statusCode: 200, error: null }),
    ]);
  });
});

describe("plantstore-server webhooks deliveries and replay", () => {
  it("shows each delivery with its attempts, and --failed only those still failing", async () => {
    const receiver = await startReceiver((n) => ({ status: n <= 3 ? 500 : 200 }));
    cleanups.push(receiver.close);
    const clock = new SkippableClock();
    const server = await storeWith(receiver.url, {}, clock);
    await server.createRaw('{"id":3,"name":"retried"}');
    await clock.skipUntil(() => receiver.received.length === 4, { what: "four attempts" });
    const history = await admin(server);
    await newestDelivered(history);

    // Reads only, so run side by side: each is a process of its own.
    const [all, text, failed, detailed, detailedText] = await Promise.all(
      [
        ["deliveries", "--json"],
        ["deliveries"],
        ["deliveries", "--failed", "--json"],
        ["deliveries", "--attempts", "--json"],
        ["deliveries", "--attempts"],
      ].map((args) => webhooksCli(server, args)),
    );
    expect(all!.code).toBe(0);
    const [delivery] = JSON.parse(all!.stdout) as DeliveryJson[];
    expect(delivery).toMatchObject({
      status: "delivered",
      attempts: 4,
      lastStatus: 200,
      messageId: receiver.received[0]!.headers["webhook-id"],
    });
    expect(text!.stdout).toMatch(new RegExp(`^${delivery!.id}  delivered  attempts 4  msg_`, "m"));
    // Delivered in the end: no longer failing.
    expect(JSON.parse(failed!.stdout)).toEqual([]);

    // Every failure was recorded, and --attempts shows them.
    const [withLog] = JSON.parse(detailed!.stdout) as Array<
      DeliveryJson & { attemptLog: Array<{ statusCode: number | null; durationMs: number }> }
    >;
    expect(withLog!.attemptLog.map((a) => a.statusCode)).toEqual([500, 500, 500, 200]);
    expect(detailedText!.stdout.match(/^ {4}\d{4}-\d\d-\d\dT\S+Z {2}500 {2}\d+ ms$/gm)).toHaveLength(3);
  });

  it("lists a delivery that is being retried under --failed, and replay sends it again now with the same webhook-id", async () => {
    const receiver = await startReceiver(() => ({ status: 503 }));
    cleanups.push(receiver.close);
    // A long backoff (at least 5 min): after its first failure the delivery waits, until replayed.
    const clock = new SkippableClock();
    const server = await storeWith(receiver.url, { webhookRetryBaseMs: 600_000 }, clock);
    await server.createRaw('{"id":4,"name":"failing"}');
    await eventually(() => receiver.received.length === 1, { what: "the first attempt" });
    const history = await admin(server);
    await eventually(async () => (await history.deliveries({ failedOnly: true, limit: 10 })).length === 1, {
      what: "the failure recorded",
    });

    const failed = await webhooksCli(server, ["deliveries", "--failed", "--json"]);
    const [delivery] = JSON.parse(failed.stdout) as DeliveryJson[];
    expect(delivery).toMatchObject({ status: "pending", attempts: 1, lastStatus: 503 });
    const text = await webhooksCli(server, ["deliveries", "--failed"]);
    expect(text.stdout).toMatch(/attempts 1 .* last: 503/);

    const replayed = await webhooksCli(server, ["replay", String(delivery!.id)]);
    expect(replayed).toMatchObject({ code: 0, stdout: `delivery ${delivery!.id} queued again\n` });
    // Well within the backoff: the replay, not a retry, sends it.
    await clock.skipUntil(() => receiver.received.length === 2, { what: "the replayed attempt" });
    expect(receiver.received[1]!.headers["webhook-id"]).toBe(receiver.received[0]!.headers["webhook-id"]);
    expect(receiver.received[1]!.body).toBe(receiver.received[0]!.body);
  });

  it("replays a delivered event once more on request, with the same webhook-id", async () => {
    const receiver = await startReceiver(() => ({ status: 200 }));
    cleanups.push(receiver.close);
    const clock = new SkippableClock();
    const server = await storeWith(receiver.url, {}, clock);
    await server.createRaw('{"id":5,"name":"again"}');
    await eventually(() => receiver.received.length === 1, { what: "the delivery" });
    const history = await admin(server);
    const delivery = await newestDelivered(history);
    expect((await webhooksCli(server, ["replay", String(delivery.id)])).code).toBe(0);
    await clock.skipUntil(() => receiver.received.length === 2, { what: "the replay" });
    expect(receiver.received[1]!.headers["webhook-id"]).toBe(receiver.received[0]!.headers["webhook-id"]);
    // Once more only: delivered again, it is not sent a third time.
    await clock.skip(DAY);
    expect(receiver.received).toHaveLength(2);
  });

  it.each([["999"], ["abc"], ["1.5"]])(
    "refuses to replay delivery %j, which does not exist, with exit code 1",
    async (id) => {
      const server = await storeWith("https://hooks.example.com/plants");
      const result = await webhooksCli(server, ["replay", id]);
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(`${openedLine(server)}plantstore-server: no delivery ${id}\n`);
    },
  );

  it("refuses to replay a delivery whose subscriber was removed, and keeps delivering to the others", async () => {
    const gone = await startReceiver(() => ({ status: 200 }));
    cleanups.push(gone.close);
    const staying = await startReceiver(() => ({ status: 200 }));
    cleanups.push(staying.close);
    const server = await storeWith(gone.url);
    await server.createRaw('{"id":6,"name":"first"}');
    await eventually(() => gone.received.length === 1, { what: "the first delivery" });
    const history = await admin(server);
    const delivery = await newestDelivered(history);
    expect((await webhooksCli(server, ["remove", delivery.subscriberId])).code).toBe(0);
    await history.add(staying.url, SECRET);

    const replayed = await webhooksCli(server, ["replay", String(delivery.id)]);
    expect(replayed.code).toBe(1);
    expect(replayed.stderr).toBe(
      `${openedLine(server)}plantstore-server: delivery ${delivery.id} cannot be sent: its subscriber was removed\n`,
    );
    await server.createRaw('{"id":7,"name":"second"}');
    await eventually(() => staying.received.length === 1, { what: "the delivery to the remaining subscriber" });
    expect(gone.received).toHaveLength(1);
  });
});

describe("a subscriber removed while an attempt to it is in flight", () => {
  it("gets nothing more, and deliveries to the other subscribers go on", async () => {
    let release = () => {};
    const released = new Promise<void>((resolve) => (release = resolve));
    const removed = await startReceiver(async () => {
      await released;
      return { status: 500 };
    });
    cleanups.push(removed.close);
    const staying = await startReceiver(() => ({ status: 200 }));
    cleanups.push(staying.close);
    const clock = new SkippableClock();
    const server = await storeWith(removed.url, {}, clock);
    await server.createRaw('{"id":8,"name":"in flight"}');
    await eventually(() => removed.received.length === 1, { what: "the attempt in flight" });
    const history = await admin(server);
    expect(await history.remove((await history.list())[0]!.id)).toBe(true);
    release(); // the attempt now fails (500) and is recorded after the removal
    await eventually(async () => (await history.deliveries({ failedOnly: false, limit: 1 }))[0]?.attempts === 1, {
      what: "the attempt recorded",
    });
    expect((await history.deliveries({ failedOnly: false, limit: 1 }))[0]).toMatchObject({
      status: "cancelled",
      lastStatus: 500,
    });

    await history.add(staying.url, SECRET);
    await server.createRaw('{"id":9,"name":"after"}');
    await eventually(() => staying.received.length === 1, { what: "the delivery to the remaining subscriber" });
    // Its retry would have been due long before: never sent.
    await clock.skip(DAY);
    expect(removed.received).toHaveLength(1);
  });
});
