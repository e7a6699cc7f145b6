import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

import { eventually } from "@plantstore/test-support/eventually";
import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it } from "vitest";

import { openWebhookAdmin } from "../../src/storage/open-store.ts";
import { startTestServer, type TestServer, TOKEN } from "../support/harness.ts";
import { SkippableClock } from "../support/skippable-clock.ts";
import { type Received, startReceiver } from "../support/webhook-receiver.ts";

const BIN = fileURLToPath(new URL("../../dist/bin.js", import.meta.url));
const SECRET = `whsec_${Buffer.alloc(32, 4).toString("base64")}`;
/** Far past any retry of these tests (40 ms base): once skipped, whatever was due has been sent. */
const DAY = 24 * 60 * 60 * 1000;
const MAX = 2n ** 63n - 1n;

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

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

async function receiver() {
  const started = await startReceiver(() => ({ status: 204 }));
  cleanups.push(started.close);
  return started;
}

/** The body, once its Standard Webhooks signature verified. */
function verified(r: Received): string {
  new Webhook(SECRET).verify(r.body, r.headers as Record<string, string>);
  return r.body;
}

describe("webhook event types", () => {
  it("send plant.created, plant.updated and plant.deleted envelopes to a subscriber that chose them, and only the bare new plant to one that did not", async () => {
    const [chosen, legacy] = [await receiver(), await receiver()];
    const clock = new SkippableClock();
    const server = await startTestServer({ webhookAllowedHosts: ["127.0.0.1"], webhookRetryBaseMs: 40 }, { clock });
    cleanups.push(() => server.close());
    const admin = await openWebhookAdmin(server.database.url);
    cleanups.push(() => admin.close());
    await admin.add(legacy.url, SECRET);
    const added = await webhooksCli(server, [
      "add",
      chosen.url,
      "--events",
      "plant.created,plant.updated,plant.deleted",
      "--secret",
      SECRET,
      "--json",
    ]);
    expect(added.code, added.stderr).toBe(0);
    expect(JSON.parse(added.stdout)).toMatchObject({ events: ["plant.created", "plant.updated", "plant.deleted"] });
    const listed = await webhooksCli(server, ["list"]);
    expect(listed.stdout).toContain(`${chosen.url}  plant.created,plant.updated,plant.deleted`);
    expect(listed.stdout).toContain(`${legacy.url}  new plants, bare payload`);

    expect((await server.createRaw(`{"id":${MAX},"name":"Fern","tag":"green"}`)).status).toBe(200);
    await eventually(() => chosen.received.length === 1, { what: "plant.created" });
    const fern = { id: MAX, name: "Fern", tag: "green" };
    // The server's own store, as PATCH calls it.
    expect(await server.store.update(MAX, { tag: null }, [await server.store.etag(fern)])).toMatchObject({
      outcome: "written",
    });
    await eventually(() => chosen.received.length === 2, { what: "plant.updated" });
    const deleted = await server.send({
      method: "DELETE",
      path: `/plants/${MAX}`,
      contractPath: "/plants/{id}",
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(deleted.status).toBe(204);
    await eventually(() => chosen.received.length === 3, { what: "plant.deleted" });
    await clock.skip(DAY);

    const envelope = /^\{"type":"([a-z.]+)","timestamp":"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)","data":(.*)\}$/;
    const bodies = chosen.received.map((r) => envelope.exec(verified(r)));
    expect(bodies.map((m) => [m?.[1], m?.[3]])).toEqual([
      ["plant.created", '{"id":9223372036854775807,"name":"Fern","tag":"green"}'],
      ["plant.updated", '{"id":9223372036854775807,"name":"Fern"}'],
      ["plant.deleted", '{"id":9223372036854775807}'],
    ]);
    const times = bodies.map((m) => Date.parse(m![2]!));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    expect(new Set(chosen.received.map((r) => r.headers["webhook-id"])).size).toBe(3);

    expect(legacy.received.map(verified)).toEqual(['{"id":9223372036854775807,"name":"Fern","tag":"green"}']);

    // Each delivery says which event it sends, newest first.
    const deliveries = await webhooksCli(server, ["deliveries", "--json"]);
    expect(deliveries.code, deliveries.stderr).toBe(0);
    const chosenId = (JSON.parse(added.stdout) as { id: string }).id;
    const sent = (JSON.parse(deliveries.stdout) as Array<{ subscriberId: string; event: string | null }>).map((d) => [
      d.subscriberId === chosenId ? "chosen" : "legacy",
      d.event,
    ]);
    expect(sent).toEqual([
      ["chosen", "plant.deleted"],
      ["chosen", "plant.updated"],
      ["chosen", "plant.created"],
      ["legacy", null],
    ]);
    const text = (await webhooksCli(server, ["deliveries"])).stdout;
    expect(text).toContain("  plant.updated");
    expect(text).toContain("  new plants, bare payload");
  });

  it("webhooks add refuses an unknown event type", async () => {
    const server = await startTestServer();
    cleanups.push(() => server.close());
    const refused = await webhooksCli(server, [
      "add",
      "http://127.0.0.1:9/hook",
      "--events",
      "plant.created,plant.eaten",
    ]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain("plant.created, plant.updated, plant.deleted");
    const admin = await openWebhookAdmin(server.database.url);
    cleanups.push(() => admin.close());
    expect(await admin.list()).toEqual([]);
  });
});
