import { spawnSync } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { DatabaseSync } from "node:sqlite";

import { eventually } from "@plantstore/test-support/eventually";
import { afterEach, describe, expect, it } from "vitest";

import { expectErrorShape, rawRequest, startTestServer, type TestServer } from "../support/harness.ts";
import { SkippableClock } from "../support/skippable-clock.ts";
import { BIN, freePort } from "../support/spawned-server.ts";

const SECRET = `whsec_${Buffer.alloc(32, 3).toString("base64")}`;

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

function subscribe(server: TestServer, url: string): void {
  const added = spawnSync(process.execPath, [BIN, "webhooks", "add", url, "--secret", SECRET], {
    env: { ...process.env, DATABASE_URL: server.database.url, PLANTSTORE_WEBHOOK_ALLOWED_HOSTS: "127.0.0.1" },
    encoding: "utf8",
  });
  expect(added.status, added.stderr).toBe(0);
}

async function receiverOn(port: number, status: number) {
  const server = createServer((_req, res) => res.writeHead(status).end());
  server.listen(port, "127.0.0.1");
  await once(server, "listening");
  cleanups.push(() => new Promise<void>((r) => server.close(() => r())));
  return (server.address() as AddressInfo).port;
}

/** One sample of a metric (`name{labels} value`), or undefined when it is not exported yet. */
async function sample(server: TestServer, series: string): Promise<number | undefined> {
  const text = (await rawRequest(server.url, { method: "GET", path: "/metrics" })).text;
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
}

describe("webhook metrics", () => {
  it("report the outbox depth, every attempt and each delivery's final outcome", async () => {
    const clock = new SkippableClock();
    const server = await startTestServer(
      { metrics: "public", webhookAllowedHosts: ["127.0.0.1"], webhookRetryBaseMs: 20 },
      { clock },
    );
    cleanups.push(() => server.close());
    // The receiver is down at first: the plants wait in the outbox.
    const port = await freePort();
    subscribe(server, `http://127.0.0.1:${port}/hook`);
    for (const id of [1, 2, 3]) expect((await server.createRaw(`{"id":${id},"name":"p${id}"}`)).status).toBe(200);
    expect(await sample(server, "plantstore_webhook_outbox_depth")).toBe(3);
    await eventually(
      async () => ((await sample(server, 'plantstore_webhook_attempts_total{outcome="failed_attempt"}')) ?? 0) >= 3,
      { what: "failed attempts" },
    );
    await receiverOn(port, 204);
    let delivered: number | undefined;
    await clock.skipUntil(
      async () => (delivered = await sample(server, 'plantstore_webhook_deliveries_total{outcome="delivered"}')) === 3,
      { what: () => `three deliveries (${delivered})` },
    );
    expect(await sample(server, "plantstore_webhook_outbox_depth")).toBe(0);
    expect(await sample(server, 'plantstore_webhook_attempts_total{outcome="delivered"}')).toBe(3);
  });

  it("count a receiver's 410 as the delivery's outcome gone", async () => {
    const server = await startTestServer({ metrics: "public", webhookAllowedHosts: ["127.0.0.1"] });
    cleanups.push(() => server.close());
    const port = await receiverOn(0, 410);
    subscribe(server, `http://127.0.0.1:${port}/hook`);
    expect((await server.createRaw('{"id":4,"name":"gone"}')).status).toBe(200);
    await eventually(async () => (await sample(server, 'plantstore_webhook_deliveries_total{outcome="gone"}')) === 1, {
      what: "the gone outcome",
    });
    expect(await sample(server, "plantstore_webhook_outbox_depth")).toBe(0);
  });
});

describe("GET /readyz and migrations", () => {
  it("reports the migrations applied, and is not ready while some this build knows are missing", async () => {
    const server = await startTestServer();
    cleanups.push(() => server.close());
    const ready = await rawRequest(server.url, { method: "GET", path: "/readyz" });
    expect(ready.status).toBe(200);
    const { migrations } = ready.json as { migrations: { applied: number; known: number } };
    expect(migrations.applied).toBe(migrations.known);
    expect(migrations.known).toBeGreaterThanOrEqual(3);
    // As if the database were older than this build (another process restored it, say).
    const forgetLatest = "DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations)";
    if (server.database.backend === "sqlite") {
      const db = new DatabaseSync(server.database.name);
      db.exec(forgetLatest);
      db.close();
    } else {
      await server.database.rows({ sqlite: forgetLatest, postgres: forgetLatest });
    }
    const behind = await rawRequest(server.url, { method: "GET", path: "/readyz" });
    expectErrorShape(behind, 503, 50300);
    expect((behind.json as { message: string }).message).toContain(`${migrations.known - 1} of ${migrations.known}`);
  });
});
