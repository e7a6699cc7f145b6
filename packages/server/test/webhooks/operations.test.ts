import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";
import { afterEach, describe, expect, it } from "vitest";
import { openWebhookAdmin } from "../../src/storage/open-store.ts";
import type { WebhookAdmin } from "../../src/storage/webhook-admin.ts";
import { startTestServer, type TestServer } from "../support/harness.ts";
import { startReceiver, until } from "../support/webhook-receiver.ts";

const SECRET = `whsec_${Buffer.alloc(32, 9).toString("base64")}`;
const BIN = fileURLToPath(new URL("../../dist/bin.js", import.meta.url));

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

async function storeWith(url: string, overrides: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  const server = await startTestServer({ webhookAllowedHosts: ["127.0.0.1"], webhookRetryBaseMs: 40, ...overrides });
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
  const newest = async () => (await history.deliveries({ failedOnly: false, limit: 1 }))[0];
  await until(async () => (await newest())?.status === "delivered", 5_000, "delivered");
  return (await newest())!;
}

describe("webhook targets given as a private IP literal", () => {
  it("are never contacted without the allow-list, though no DNS lookup is made for them", async () => {
    const receiver = await startReceiver(() => ({ status: 200 }));
    cleanups.push(receiver.close);
    // Stored behind the CLI's back (or allowed when added, and the allow-list changed since).
    const server = await storeWith(receiver.url, { webhookAllowedHosts: [] });
    await server.createRaw('{"id":1,"name":"a"}');
    const deliveries = await admin(server);
    await until(
      async () => (await deliveries.deliveries({ failedOnly: true, limit: 10 })).length === 1,
      10_000,
      "a failed attempt",
    );
    expect((await deliveries.deliveries({ failedOnly: true, limit: 10 }))[0]!.lastError).toMatch(/non-public/);
    expect(receiver.received).toHaveLength(0);
  });
});

describe("the per-attempt timeout", () => {
  it("gives up on a receiver that does not answer in time, records why, and retries with the same webhook-id", async () => {
    const receiver = await startReceiver((n) => (n === 1 ? "hang" : { status: 200 }));
    cleanups.push(receiver.close);
    const server = await storeWith(receiver.url, { webhookTimeoutMs: 300 });
    await server.createRaw('{"id":2,"name":"slow"}');
    await until(() => receiver.received.length === 2, 10_000, "the retry after the timeout");
    const [first, second] = receiver.received;
    expect(second!.headers["webhook-id"]).toBe(first!.headers["webhook-id"]);
    // Not before the timeout ran out; generously bounded above, since the machine is shared.
    expect(second!.at - first!.at).toBeGreaterThanOrEqual(280);
    expect(second!.at - first!.at).toBeLessThan(8_000);
    const history = await admin(server);
    const delivery = await newestDelivered(history);
    expect(delivery).toMatchObject({ attempts: 2, lastStatus: 200 });
    expect(await history.attempts(delivery!.id)).toEqual([
      expect.objectContaining({ statusCode: null, error: "no answer within 300 ms" }),
      expect.objectContaining({ statusCode: 200, error: null }),
    ]);
  });
});

describe("plantstore-server webhooks deliveries and replay", () => {
  it("shows each delivery with its attempts, and --failed only those still failing", async () => {
    const receiver = await startReceiver((n) => ({ status: n <= 3 ? 500 : 200 }));
    cleanups.push(receiver.close);
    const server = await storeWith(receiver.url);
    await server.createRaw('{"id":3,"name":"retried"}');
    await until(() => receiver.received.length === 4, 15_000, "four attempts");
    const history = await admin(server);
    await newestDelivered(history);

    const all = await webhooksCli(server, ["deliveries", "--json"]);
    expect(all.code).toBe(0);
    const [delivery] = JSON.parse(all.stdout) as DeliveryJson[];
    expect(delivery).toMatchObject({
      status: "delivered",
      attempts: 4,
      lastStatus: 200,
      messageId: receiver.received[0]!.headers["webhook-id"],
    });
    const text = await webhooksCli(server, ["deliveries"]);
    expect(text.stdout).toMatch(new RegExp(`^${delivery!.id}  delivered  attempts 4  msg_`, "m"));
    // Delivered in the end: no longer failing.
    expect(JSON.parse((await webhooksCli(server, ["deliveries", "--failed", "--json"])).stdout)).toEqual([]);

    // Every failure was recorded, and --attempts shows them.
    const detailed = await webhooksCli(server, ["deliveries", "--attempts", "--json"]);
    const [withLog] = JSON.parse(detailed.stdout) as Array<
      DeliveryJson & { attemptLog: Array<{ statusCode: number | null; durationMs: number }> }
    >;
    expect(withLog!.attemptLog.map((a) => a.statusCode)).toEqual([500, 500, 500, 200]);
    const detailedText = await webhooksCli(server, ["deliveries", "--attempts"]);
    expect(detailedText.stdout.match(/^ {4}\d{4}-\d\d-\d\dT\S+Z {2}500 {2}\d+ ms$/gm)).toHaveLength(3);
  });

  it("lists a delivery that is being retried under --failed, and replay sends it again now with the same webhook-id", async () => {
    const receiver = await startReceiver(() => ({ status: 503 }));
    cleanups.push(receiver.close);
    // A long backoff: after its first failure the delivery waits, until replayed.
    const server = await storeWith(receiver.url, { webhookRetryBaseMs: 600_000 });
    await server.createRaw('{"id":4,"name":"failing"}');
    await until(() => receiver.received.length === 1, 10_000, "the first attempt");
    const history = await admin(server);
    await until(
      async () => (await history.deliveries({ failedOnly: true, limit: 10 })).length === 1,
      5_000,
      "the failure recorded",
    );

    const failed = await webhooksCli(server, ["deliveries", "--failed", "--json"]);
    const [delivery] = JSON.parse(failed.stdout) as DeliveryJson[];
    expect(delivery).toMatchObject({ status: "pending", attempts: 1, lastStatus: 503 });
    const text = await webhooksCli(server, ["deliveries", "--failed"]);
    expect(text.stdout).toMatch(/attempts 1 .* last: 503/);

    const replayed = await webhooksCli(server, ["replay", String(delivery!.id)]);
    expect(replayed).toMatchObject({ code: 0, stdout: `delivery ${delivery!.id} queued again\n` });
    await until(() => receiver.received.length === 2, 10_000, "the replayed attempt");
    expect(receiver.received[1]!.headers["webhook-id"]).toBe(receiver.received[0]!.headers["webhook-id"]);
    expect(receiver.received[1]!.body).toBe(receiver.received[0]!.body);
  });

  it("replays a delivered event once more on request, with the same webhook-id", async () => {
    const receiver = await startReceiver(() => ({ status: 200 }));
    cleanups.push(receiver.close);
    const server = await storeWith(receiver.url);
    await server.createRaw('{"id":5,"name":"again"}');
    await until(() => receiver.received.length === 1, 10_000, "the delivery");
    const history = await admin(server);
    const delivery = await newestDelivered(history);
    expect((await webhooksCli(server, ["replay", String(delivery!.id)])).code).toBe(0);
    await until(() => receiver.received.length === 2, 10_000, "the replay");
    expect(receiver.received[1]!.headers["webhook-id"]).toBe(receiver.received[0]!.headers["webhook-id"]);
    await new Promise((r) => setTimeout(r, 300));
    expect(receiver.received).toHaveLength(2);
  });

  it.each([["999"], ["abc"], ["1.5"]])(
    "refuses to replay delivery %j, which does not exist, with exit code 1",
    async (id) => {
      const server = await storeWith("https://hooks.example.com/plants");
      const result = await webhooksCli(server, ["replay", id]);
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(`plantstore-server: no delivery ${id}\n`);
    },
  );

  it("refuses to replay a delivery whose subscriber was removed, and keeps delivering to the others", async () => {
    const gone = await startReceiver(() => ({ status: 200 }));
    cleanups.push(gone.close);
    const staying = await startReceiver(() => ({ status: 200 }));
    cleanups.push(staying.close);
    const server = await storeWith(gone.url);
    await server.createRaw('{"id":6,"name":"first"}');
    await until(() => gone.received.length === 1, 10_000, "the first delivery");
    const history = await admin(server);
    const delivery = await newestDelivered(history);
    expect((await webhooksCli(server, ["remove", delivery!.subscriberId])).code).toBe(0);
    await history.add(staying.url, SECRET);

    const replayed = await webhooksCli(server, ["replay", String(delivery!.id)]);
    expect(replayed.code).toBe(1);
    expect(replayed.stderr).toBe(
      `plantstore-server: delivery ${delivery!.id} cannot be sent: its subscriber was removed\n`,
    );
    await server.createRaw('{"id":7,"name":"second"}');
    await until(() => staying.received.length === 1, 10_000, "the delivery to the remaining subscriber");
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
    const server = await storeWith(removed.url);
    await server.createRaw('{"id":8,"name":"in flight"}');
    await until(() => removed.received.length === 1, 10_000, "the attempt in flight");
    const history = await admin(server);
    expect(await history.remove((await history.list())[0]!.id)).toBe(true);
    release(); // the attempt now fails (500) and is recorded after the removal
    await until(
      async () => (await history.deliveries({ failedOnly: false, limit: 1 }))[0]?.attempts === 1,
      10_000,
      "the attempt recorded",
    );
    expect((await history.deliveries({ failedOnly: false, limit: 1 }))[0]).toMatchObject({
      status: "cancelled",
      lastStatus: 500,
    });

    await history.add(staying.url, SECRET);
    await server.createRaw('{"id":9,"name":"after"}');
    await until(() => staying.received.length === 1, 10_000, "the delivery to the remaining subscriber");
    await new Promise((r) => setTimeout(r, 300));
    expect(removed.received).toHaveLength(1);
  });
});
