import { Agent } from "node:http";

import { eventually } from "@plantstore/test-support/eventually";
import { Webhook } from "standardwebhooks";
import { afterEach, describe, expect, it } from "vitest";

import {
  type Answer,
  idOf,
  postPlant,
  runBin,
  type ServerProcess,
  startServerProcess,
} from "../../support/processes.ts";
import { createTestDatabase } from "../../support/test-database.ts";
import { startReceiver } from "../../support/webhook-receiver.ts";

const TOKEN = "multi-instance-token-0123456789abcdef";
const SECRET = `whsec_${Buffer.alloc(32, 3).toString("base64")}`;

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

type Attempt = { id: bigint; name: string; tag?: string; server: number; answer?: Answer };

/** The JSON answer a 200 must carry for this request: exactly its name and tag. */
const expectedBody = (a: Attempt) =>
  JSON.stringify(a.tag === undefined ? { name: a.name } : { name: a.name, tag: a.tag });

describe("three plantstore-server processes on one PostgreSQL", () => {
  it("store every id exactly once, answer 200 or 409 as the content says, and deliver every event once", async () => {
    const database = await createTestDatabase("postgres");
    cleanups.push(() => database.dispose());
    const receiver = await startReceiver(() => ({ status: 200 }));
    cleanups.push(() => receiver.close());
    const env = {
      DATABASE_URL: database.url,
      PLANTSTORE_TOKENS: TOKEN,
      PLANTSTORE_PG_POOL_SIZE: "5",
      PLANTSTORE_WEBHOOK_ALLOWED_HOSTS: "127.0.0.1",
    };

    // All three start at once on a fresh database: migrations run under the advisory lock.
    const servers: ServerProcess[] = await Promise.all([0, 1, 2].map(() => startServerProcess(env)));
    cleanups.push(() => Promise.all(servers.map((s) => s.stop())));
    const added = await runBin(["webhooks", "add", receiver.url, "--secret", SECRET, "--json"], env);
    expect(added.code, added.out).toBe(0);

    // 600 ids over the whole int64 range; each is sent four times, to random servers, in random
    // order: twice with the same content, once with another name, once with a tag added.
    const ids = Array.from({ length: 600 }, (_, i) => (i % 2 === 0 ? 1n : -1n) * (2n ** 62n + BigInt(i) * 15_485_863n));
    const attempts: Attempt[] = ids.flatMap((id) => [
      { id, name: `plant ${id}`, server: 0 },
      { id, name: `plant ${id}`, server: 0 },
      { id, name: `other ${id}`, server: 0 },
      { id, name: `plant ${id}`, tag: "extra", server: 0 },
    ]);
    for (let i = attempts.length - 1; i > 0; i--) {
      const j = Math.floor(Math.random() * (i + 1));
      [attempts[i], attempts[j]] = [attempts[j]!, attempts[i]!];
    }
    for (const a of attempts) a.server = Math.floor(Math.random() * servers.length);

    const agents = servers.map(() => new Agent({ keepAlive: true, maxSockets: 16 }));
    cleanups.push(async () => agents.forEach((a) => a.destroy()));
    let next = 0;
    const client = async () => {
      while (next < attempts.length) {
        const a = attempts[next++]!;
        const body = `{"id":${a.id},"name":${JSON.stringify(a.name)}${a.tag === undefined ? "" : `,"tag":"${a.tag}"`}}`;
        a.answer = await postPlant(agents[a.server]!, servers[a.server]!.url, TOKEN, body);
      }
    };
    await Promise.all(Array.from({ length: 48 }, client));

    // Every answer is a 200 carrying its own content, or a 409 Error.
    for (const a of attempts) {
      if (a.answer!.status === 200) expect(a.answer!.text).toBe(expectedBody(a));
      else {
        expect(a.answer!.status, a.answer!.text).toBe(409);
        expect(JSON.parse(a.answer!.text)).toMatchObject({ error: 40900 });
      }
    }
    // Every id stored once, and the stored plant is exactly what every 200 for it said, unlike every 409.
    expect(await database.count()).toBe(ids.length);
    for (const id of ids) {
      const row = (await database.row(id))!;
      const stored = { name: row.name, tag: row.tag ?? undefined };
      const mine = attempts.filter((a) => a.id === id);
      expect(mine.some((a) => a.answer!.status === 200)).toBe(true);
      for (const a of mine) {
        const same = a.name === stored.name && a.tag === stored.tag;
        expect(a.answer!.status).toBe(same ? 200 : 409);
      }
    }
    const answered200 = new Set(attempts.filter((a) => a.answer!.status === 200).map((a) => a.id));
    expect(answered200.size).toBe(ids.length);

    // One event per stored plant, delivered once (the claims are shared), signed, with the stored content.
    await eventually(() => new Set(receiver.received.map((r) => r.headers["webhook-id"])).size >= ids.length, {
      what: "every event",
      timeoutMs: 60_000,
    });
    // Each process stops cleanly; a stop lets the delivery under way finish, so once all three have
    // stopped no second copy can still be on its way.
    expect(await Promise.all(servers.map((s) => s.stop()))).toEqual([0, 0, 0]);
    expect(receiver.received).toHaveLength(ids.length);
    const byId = new Map(receiver.received.map((r) => [idOf(r.body), r]));
    expect(byId.size).toBe(ids.length);
    for (const id of ids) {
      const delivered = byId.get(id)!;
      const row = (await database.row(id))!;
      expect(delivered.body).toBe(
        `{"id":${id},"name":${JSON.stringify(row.name)}${row.tag === null ? "" : `,"tag":${JSON.stringify(row.tag)}`}}`,
      );
      expect(() =>
        new Webhook(SECRET).verify(delivered.body, delivered.headers as Record<string, string>),
      ).not.toThrow();
    }
    // The admin CLI sees the same on PostgreSQL: every delivery delivered, none failed.
    const deliveries = await runBin(["webhooks", "deliveries", "--json", "--limit", "1000"], env);
    expect(deliveries.code, deliveries.out).toBe(0);
    const rows = JSON.parse(deliveries.stdout) as Array<{ status: string; attempts: number }>;
    expect(rows).toHaveLength(ids.length);
    expect(rows.every((d) => d.status === "delivered" && d.attempts === 1)).toBe(true);

    for (const s of servers) expect(s.output()).not.toContain(TOKEN);
  }, 180_000);
});
