import { spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";

import { eventually } from "@plantstore/test-support/eventually";
import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it } from "vitest";

import { openWebhookAdmin } from "../../src/storage/open-store.ts";
import { checkWebhookUrl, createOutboundPolicy } from "../../src/webhooks/outbound-guard.ts";
import { rawRequest, startTestServer, type TestServer, TOKEN } from "../support/harness.ts";
import { SkippableClock } from "../support/skippable-clock.ts";
import { createTestDatabase } from "../support/test-database.ts";
import { startReceiver } from "../support/webhook-receiver.ts";

const BIN = fileURLToPath(new URL("../../dist/bin.js", import.meta.url));
const SECRET = `whsec_${Buffer.alloc(32, 7).toString("base64")}`;
/** Far past any retry of these tests (40 ms base): once skipped, whatever was due has been sent. */
const DAY = 24 * 60 * 60 * 1000;

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function storeWithSubscriber(url: string, clock?: SkippableClock): Promise<TestServer> {
  const server = await startTestServer({ webhookAllowedHosts: ["127.0.0.1"], webhookRetryBaseMs: 40 }, { clock });
  cleanups.push(() => server.close());
  const admin = await openWebhookAdmin(server.database.url);
  await admin.add(url, SECRET);
  await admin.close();
  return server;
}

describe("the new-plant webhook", () => {
  it("POSTs exactly the NewPlant JSON, signed so the Standard Webhooks library verifies it", async () => {
    const receiver = await startReceiver(() => ({ status: 204 }));
    cleanups.push(receiver.close);
    const server = await storeWithSubscriber(receiver.url);
    expect((await server.createRaw('{"id":9223372036854775807,"name":"Fern","tag":"fern","extra":1}')).status).toBe(
      200,
    );
    await eventually(() => receiver.received.length === 1, { what: "one delivery" });
    const [delivery] = receiver.received;
    expect(delivery!.body).toBe('{"id":9223372036854775807,"name":"Fern","tag":"fern"}');
    expect(delivery!.headers["content-type"]).toBe("application/json");
    expect(delivery!.headers["webhook-id"]).toMatch(/^msg_[0-9a-f]{32}$/);
    expect(delivery!.headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]+=*$/);
    const verified = new Webhook(SECRET).verify(delivery!.body, delivery!.headers as Record<string, string>);
    expect(verified).toMatchObject({ name: "Fern", tag: "fern" });
    // And a tampered body does not verify.
    expect(() =>
      new Webhook(SECRET).verify(delivery!.body.replace("Fern", "Fake"), delivery!.headers as Record<string, string>),
    ).toThrow();
  });

  it("retries a receiver that fails three times, with the same webhook-id each time", async () => {
    const receiver = await startReceiver((n) => ({ status: n <= 3 ? 500 : 200 }));
    cleanups.push(receiver.close);
    const clock = new SkippableClock();
    const server = await storeWithSubscriber(receiver.url, clock);
    await server.createRaw('{"id":1,"name":"Moss"}');
    await clock.skipUntil(() => receiver.received.length === 4, { what: "four attempts" });
    const ids = new Set(receiver.received.map((r) => r.headers["webhook-id"]));
    expect(ids.size).toBe(1);
    // Delivered: never sent again, however long the dispatcher goes on.
    await clock.skip(DAY);
    expect(receiver.received).toHaveLength(4);
  });

  it("announces an idempotent replay no second time", async () => {
    const receiver = await startReceiver(() => ({ status: 200 }));
    cleanups.push(receiver.close);
    const clock = new SkippableClock();
    const server = await storeWithSubscriber(receiver.url, clock);
    await server.createRaw('{"id":2,"name":"Ivy"}');
    await server.createRaw('{"id":2,"name":"Ivy"}');
    await server.createRaw('{"id":2,"name":"Other"}'); // 409: nothing new either
    await eventually(() => receiver.received.length >= 1, { what: "the delivery" });
    // A pass that starts after every write has sent whatever the writes put in the outbox.
    await clock.skip(DAY);
    expect(receiver.received).toHaveLength(1);
  });

  it("delivers all 1,000 plants created while the receiver was down, once it is back", async () => {
    // Take a free port and leave it closed: the receiver is down.
    const probe = await startReceiver(() => ({ status: 200 }));
    const port = probe.port;
    await probe.close();
    const clock = new SkippableClock();
    const server = await storeWithSubscriber(`http://127.0.0.1:${port}/hook`, clock);
    for (let start = 0; start < 1000; start += 100) {
      await Promise.all(
        Array.from({ length: 100 }, (_, i) => server.createRaw(`{"id":${10_000 + start + i},"name":"p${start + i}"}`)),
      );
    }
    // Down indeed: attempts fail, and those deliveries wait for a retry.
    const admin = await openWebhookAdmin(server.database.url);
    cleanups.push(() => admin.close());
    await eventually(async () => (await admin.deliveries({ failedOnly: true, limit: 1 })).length === 1, {
      what: "a failed attempt",
    });
    const receiver = await startReceiver(() => ({ status: 200 }), port);
    cleanups.push(receiver.close);
    await clock.skipUntil(() => new Set(receiver.received.map((r) => r.headers["webhook-id"])).size === 1000, {
      what: () => `1,000 events (${receiver.received.length} received)`,
      stepMs: 1_000,
      timeoutMs: 60_000,
    });
    const ids = new Set(
      receiver.received.map((r) => (JSON.parse(r.body.replace(/"id":(-?\d+)/, '"id":"$1"')) as { id: string }).id),
    );
    expect(ids.size).toBe(1000);
  }, 90_000);

  it("honours Retry-After", async () => {
    const clock = new SkippableClock();
    const times: number[] = [];
    const receiver = await startReceiver((n) => {
      times.push(clock.now());
      return n === 1 ? { status: 429, headers: { "retry-after": "1" } } : { status: 200 };
    });
    cleanups.push(receiver.close);
    const server = await storeWithSubscriber(receiver.url, clock);
    await server.createRaw('{"id":3,"name":"Sage"}');
    // Steps well below the second asked for, against a backoff of 20 to 60 ms.
    await clock.skipUntil(() => receiver.received.length === 2, { what: "the retry", stepMs: 100 });
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(1_000);
  });

  it("stops sending to a receiver that answers 410 Gone", async () => {
    const receiver = await startReceiver(() => ({ status: 410 }));
    cleanups.push(receiver.close);
    const clock = new SkippableClock();
    const server = await storeWithSubscriber(receiver.url, clock);
    await server.createRaw('{"id":4,"name":"a"}');
    await eventually(() => receiver.received.length === 1, { what: "the first delivery" });
    await server.createRaw('{"id":5,"name":"b"}');
    await clock.skip(DAY);
    expect(receiver.received).toHaveLength(1);
    const admin = await openWebhookAdmin(server.database.url);
    expect((await admin.list())[0]).toMatchObject({ active: false });
    await admin.close();
  });
});

describe("webhook targets on private addresses", () => {
  it("are refused by default, and allowed when listed", () => {
    const strict = createOutboundPolicy([]);
    for (const url of [
      "http://127.0.0.1/x",
      "http://10.1.2.3/x",
      "http://192.168.0.1/",
      "http://169.254.169.254/",
      "http://[::1]/",
      "http://localhost/",
    ]) {
      expect(() => checkWebhookUrl(url, strict)).toThrow(/PLANTSTORE_WEBHOOK_ALLOWED_HOSTS/);
    }
    expect(() => checkWebhookUrl("ftp://example.com/", strict)).toThrow(/http or https/);
    expect(() => checkWebhookUrl("https://example.com/hook", strict)).not.toThrow();
    expect(() => checkWebhookUrl("http://10.1.2.3/x", createOutboundPolicy(["10.0.0.0/8"]))).not.toThrow();
  });

  it("are never contacted at delivery time without the allow-list (checked on the resolved address)", async () => {
    const receiver = await startReceiver(() => ({ status: 200 }));
    cleanups.push(receiver.close);
    const server = await startTestServer({ webhookRetryBaseMs: 40 });
    cleanups.push(() => server.close());
    const admin = await openWebhookAdmin(server.database.url);
    cleanups.push(() => admin.close());
    await admin.add(receiver.url.replace("127.0.0.1", "localhost"), SECRET); // stored behind the CLI's back
    await server.createRaw('{"id":6,"name":"a"}');
    const failed = await eventually(
      async () => {
        const rows = await admin.deliveries({ failedOnly: true, limit: 10 });
        return rows.length === 1 && rows;
      },
      { what: "a failed attempt" },
    );
    expect(failed[0]!.lastError).toMatch(/non-public/);
    expect(receiver.received).toHaveLength(0);
  });

  it("plantstore-server webhooks add refuses them (the CLI), and adds a public one", async () => {
    const database = await createTestDatabase();
    cleanups.push(() => database.dispose());
    const run = (args: string[]) =>
      new Promise<{ code: number | null; stdout: string; out: string }>((resolve) => {
        const child = spawn(process.execPath, [BIN, "webhooks", ...args, "--database-url", database.url], {
          stdio: ["ignore", "pipe", "pipe"],
          env: { ...process.env, PLANTSTORE_WEBHOOK_ALLOWED_HOSTS: "" },
        });
        let stdout = "";
        let out = "";
        child.stdout.on("data", (c: Buffer) => {
          stdout += c.toString();
          out += c.toString();
        });
        child.stderr.on("data", (c: Buffer) => (out += c.toString()));
        child.on("close", (code) => resolve({ code, stdout, out }));
      });
    const refused = await run(["add", "http://127.0.0.1:9/hook"]);
    expect(refused.code).toBe(1);
    expect(refused.out).toMatch(/private, loopback or link-local/);
    // Side by side now that the first run migrated the database. Loopback in an IPv6 form the old
    // hand-written deny-list let through (issue 23).
    const [compatible, added] = await Promise.all([
      run(["add", "http://[::127.0.0.1]:9/hook"]),
      run(["add", "https://hooks.example.com/plants", "--json"]),
    ]);
    expect(compatible.code).toBe(1);
    expect(compatible.out).toMatch(/PLANTSTORE_WEBHOOK_ALLOWED_HOSTS/);
    expect(added.code).toBe(0);
    const subscriber = JSON.parse(added.stdout) as { id: string; secret: string };
    expect(subscriber.secret).toMatch(/^whsec_/);
    const listed = await run(["list", "--json"]);
    expect(listed.out).not.toContain(subscriber.secret);
    expect(JSON.parse(listed.stdout)).toEqual([expect.objectContaining({ id: subscriber.id, active: true })]);
    expect((await run(["remove", subscriber.id])).code).toBe(0);
  });
});

describe("the outbox across a crash", () => {
  it("loses no event of a 200 when the server is SIGKILLed and restarted", async () => {
    const database = await createTestDatabase();
    cleanups.push(() => database.dispose());
    const probe = await startReceiver(() => ({ status: 200 }));
    const port = probe.port;
    await probe.close();
    const env = {
      ...process.env,
      PLANTSTORE_TOKENS: TOKEN,
      DATABASE_URL: database.url,
      PLANTSTORE_WEBHOOK_ALLOWED_HOSTS: "127.0.0.1",
      PLANTSTORE_WEBHOOK_RETRY_BASE_MS: "40",
      PLANTSTORE_LOG_LEVEL: "info",
    };
    // Subscriber first (the receiver is down, so events stay pending).
    const migrate = spawn(process.execPath, [BIN, "migrate"], { env });
    await once(migrate, "exit");
    const admin = await openWebhookAdmin(database.url);
    await admin.add(`http://127.0.0.1:${port}/hook`, SECRET);
    await admin.close();

    const first = spawn(process.execPath, [BIN, "serve", "--port", "0"], { env, stdio: ["ignore", "pipe", "pipe"] });
    cleanups.push(() => void first.kill("SIGKILL"));
    let out = "";
    first.stdout.on("data", (c: Buffer) => (out += c.toString()));
    const url = await eventually(() => /"url":"(http:[^"]+)"/.exec(out)?.[1], {
      what: "the server",
      timeoutMs: 15_000,
    });
    const answered: number[] = [];
    await Promise.all(
      Array.from({ length: 200 }, async (_, i) => {
        const r = await rawRequest(url, {
          method: "POST",
          path: "/plants",
          headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
          body: `{"id":${i},"name":"n${i}"}`,
        }).catch(() => undefined);
        if (r?.status === 200) answered.push(i);
      }),
    );
    first.kill("SIGKILL");
    await once(first, "exit");
    expect(answered).toHaveLength(200);

    const receiver = await startReceiver(() => ({ status: 200 }), port);
    cleanups.push(receiver.close);
    // Restarted in this process, on a clock the test moves past the killed process's leases and
    // the backoff of the attempts it made, instead of waiting out both.
    const clock = new SkippableClock();
    const second = await startTestServer(
      { webhookAllowedHosts: ["127.0.0.1"], webhookRetryBaseMs: 40 },
      { database, clock },
    );
    cleanups.push(() => second.close());
    await clock.skipUntil(() => new Set(receiver.received.map((r) => r.headers["webhook-id"])).size === 200, {
      what: () => `200 events (${receiver.received.length} received)`,
      stepMs: 60_000,
      timeoutMs: 60_000,
    });
    const delivered = new Set(receiver.received.map((r) => Number(/"id":(\d+)/.exec(r.body)![1])));
    for (const id of answered) expect(delivered.has(id)).toBe(true);
  }, 90_000);
});
