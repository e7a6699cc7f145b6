import { Agent } from "node:http";

import { eventually } from "@plantstore/test-support/eventually";
import { describe, expect, it } from "vitest";

import { StoreError } from "../../../src/storage/store-errors.ts";
import { type EventStreamClient, openEventStream } from "../../support/event-stream.ts";
import { rawRequest, type SendOptions, type TestResponse } from "../../support/harness.ts";
import { startPrivatePostgres } from "../../support/private-postgres.ts";
import { postPlant, runBin, type ServerProcess, startServerProcess } from "../../support/processes.ts";
import { postgresClient } from "../../support/test-database.ts";
import { issueToken, revokeToken } from "../../support/token-helpers.ts";
import { startReceiver } from "../../support/webhook-receiver.ts";

const TOKEN = "database-restart-token-0123456789abcdef";
const SECRET = `whsec_${Buffer.alloc(32, 5).toString("base64")}`;
const auth = { authorization: `Bearer ${TOKEN}` };
/** The plant every conditional writer fights over. */
const CONTESTED = "9007199254740993";
const PATCHERS = 16;
const CREATORS_PER_SERVER = 4;
/** What a request caught by the outage may get: the catalogue's codes for a database that cannot do it now. */
const OUTAGE_CODES = [50300, 50302];

/** A pause before a client tries again after a 503, as a real client would, not a tight loop on a shared machine. */
const pause = () =>
  // eslint-disable-next-line no-restricted-syntax -- the load generator's pause before a retry, as a real client would
  new Promise((resolve) => setTimeout(resolve, 20));

/** An answer, or status 0 when the connection failed (the server process went away). A contract violation still rejects. */
async function send(server: ServerProcess, options: SendOptions): Promise<TestResponse> {
  try {
    return await rawRequest(server.url, options);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === undefined) throw error;
    return { status: 0, headers: {}, text: String(error), json: undefined };
  }
}

type Outcome = { status: number; text: string };

/**
 * Everything the reported crashes had under way, against both servers until stopped: GET then
 * PATCH with If-Match on one plant (the losers take the row lock in a transaction), creations
 * (each with a webhook delivery), tokens issued and revoked (transactions), and /readyz polls
 * (a write probe after a failed write). Every outcome is kept.
 */
function startTraffic(servers: readonly ServerProcess[], databaseUrl: string) {
  let running = true;
  const creations: Array<{ id: number; server: number } & Outcome> = [];
  const patches: Array<{ name: string; server: number } & Outcome> = [];
  const reads: Outcome[] = [];
  const readiness: Outcome[] = [];
  const tokens = { issued: [] as string[], revoked: [] as string[], refused: 0 };
  const agents = servers.map(() => new Agent({ keepAlive: true, maxSockets: CREATORS_PER_SERVER }));
  let nextId = 1;

  const creator = async (at: number) => {
    while (running) {
      const id = nextId++;
      const answer = await postPlant(agents[at]!, servers[at]!.url, TOKEN, `{"id":${id},"name":"p${id}"}`);
      creations.push({ id, server: at, status: answer.status, text: answer.text });
      if (answer.status !== 200) await pause();
    }
  };
  const patcher = async (client: number) => {
    for (let n = 0; running; n++) {
      const at = (client + n) % servers.length;
      const plant = { path: `/plants/${CONTESTED}`, contractPath: "/plants/{id}" };
      const read = await send(servers[at]!, { method: "GET", ...plant, headers: auth });
      reads.push(read);
      if (read.status !== 200) {
        await pause();
        continue;
      }
      const name = `writer ${client}.${n}`;
      const written = await send(servers[at]!, {
        method: "PATCH",
        ...plant,
        headers: { ...auth, "content-type": "application/merge-patch+json", "if-match": String(read.headers["etag"]) },
        body: JSON.stringify({ name }),
      });
      patches.push({ name, server: at, status: written.status, text: written.text });
      if (written.status !== 200 && written.status !== 412) await pause();
    }
  };
  // Issued and revoked from this process, as the `tokens` commands do; each issued token is used once.
  const tokenChurn = async () => {
    for (let n = 0; running; n++) {
      let id: string | undefined;
      try {
        const issued = await issueToken(databaseUrl, { name: `churn-${n}` });
        id = issued.id;
        tokens.issued.push(id);
        const read = await send(servers[n % servers.length]!, {
          method: "GET",
          path: `/plants/${CONTESTED}`,
          contractPath: "/plants/{id}",
          headers: { authorization: `Bearer ${issued.token}` },
        });
        reads.push(read);
        await revokeToken(databaseUrl, id);
        tokens.revoked.push(id);
      } catch (error) {
        if (!(error instanceof StoreError)) throw error;
        tokens.refused++;
        await pause();
      }
    }
  };
  const readyzPoller = async (at: number) => {
    while (running) {
      readiness.push(await send(servers[at]!, { method: "GET", path: "/readyz" }));
      await pause();
    }
  };

  const done = Promise.all([
    ...servers.flatMap((_, at) => Array.from({ length: CREATORS_PER_SERVER }, () => creator(at))),
    ...Array.from({ length: PATCHERS }, (_, client) => patcher(client)),
    tokenChurn(),
    ...servers.map((_, at) => readyzPoller(at)),
  ]);
  return {
    creations,
    patches,
    reads,
    readiness,
    tokens,
    acked: () => ({
      creations: servers.map((_, at) => creations.filter((c) => c.server === at && c.status === 200).length),
      patches: patches.filter((p) => p.status === 200).length,
      tokens: tokens.revoked.length,
    }),
    async stop() {
      running = false;
      await done;
      for (const agent of agents) agent.destroy();
    },
  };
}

/** Each answer's status is one of `allowed`; a 503 carries a catalogued outage code and nothing else. */
function expectOnly(what: string, outcomes: readonly Outcome[], allowed: readonly number[]): void {
  const unexpected = outcomes.filter((o) => !allowed.includes(o.status));
  expect(
    unexpected.slice(0, 5),
    `${what}: ${unexpected.length} of ${outcomes.length} not in ${allowed.join(", ")}`,
  ).toEqual([]);
  for (const o of outcomes.filter((o) => o.status === 503)) {
    expect(JSON.parse(o.text)).toEqual({ error: expect.toBeOneOf(OUTAGE_CODES), message: expect.any(String) });
  }
}

describe("a PostgreSQL restart and terminated sessions under load, two server processes", () => {
  it("end neither process: requests get 503 meanwhile, both serve again within seconds, every acknowledged write is stored once", async () => {
    await using cluster = await startPrivatePostgres();
    const receiver = await startReceiver(() => ({ status: 204 }));
    const env = {
      DATABASE_URL: cluster.url,
      PLANTSTORE_TOKENS: TOKEN,
      PLANTSTORE_PG_POOL_SIZE: "6",
      PLANTSTORE_PG_CONNECT_TIMEOUT_MS: "1000",
      PLANTSTORE_PG_QUERY_TIMEOUT_MS: "2000",
      PLANTSTORE_WEBHOOK_ALLOWED_HOSTS: "127.0.0.1",
      // Short, so a delivery whose claim committed unseen (its session ended) is leased for seconds, not half a minute.
      PLANTSTORE_WEBHOOK_TIMEOUT_MS: "2000",
      PLANTSTORE_WEBHOOK_RETRY_BASE_MS: "500",
      // No poll within the test's patience: only a notification on a LISTEN connection that came back wakes a stream.
      PLANTSTORE_EVENTS_POLL_MS: "60000",
    };
    expect((await runBin(["migrate"], env)).code).toBe(0);
    const added = await runBin(["webhooks", "add", receiver.url, "--secret", SECRET, "--json"], env);
    expect(added.code, added.out).toBe(0);
    const servers = await Promise.all([startServerProcess(env), startServerProcess(env)]);
    const streams: Array<{ client: EventStreamClient; ended: boolean }> = [];
    let traffic: ReturnType<typeof startTraffic> | undefined;
    try {
      // A process that ends fails the test at once, with what it wrote last.
      const exits: string[] = [];
      const exited = new Promise<never>((_, reject) => {
        servers.forEach((server, at) =>
          server.child.once("exit", (code, signal) => {
            exits.push(`server ${at} exited (${code ?? signal}):\n${server.output().slice(-3_000)}`);
            reject(new Error(exits.join("\n")));
          }),
        );
      });
      exited.catch(() => undefined);
      const alive = <T>(step: Promise<T>) => Promise.race([step, exited]);

      const created = await rawRequest(servers[0].url, {
        method: "POST",
        path: "/plants",
        headers: { ...auth, "content-type": "application/json" },
        body: `{"id":${CONTESTED},"name":"contested"}`,
      });
      expect(created.status).toBe(200);
      for (const server of servers) {
        const stream = { client: await openEventStream(server.url, { token: TOKEN }), ended: false };
        void stream.client.ended.then(() => (stream.ended = true));
        streams.push(stream);
      }

      const load = startTraffic(servers, cluster.url);
      traffic = load;
      /** Both processes acknowledge creations, conditional writes and token changes again, past where they were. */
      const servedAgain = async (what: string) => {
        const before = load.acked();
        await alive(
          eventually(
            () => {
              const now = load.acked();
              return (
                now.creations.every((n, at) => n >= before.creations[at]! + 10) &&
                now.patches >= before.patches + 3 &&
                now.tokens >= before.tokens + 1
              );
            },
            {
              what: () => `both servers to serve again ${what}: ${JSON.stringify([before, load.acked()])}`,
              timeoutMs: 15_000,
            },
          ),
        );
      };

      await servedAgain("before any fault");
      await alive(eventually(() => receiver.received.length > 0, { what: "a webhook delivery" }));
      await alive(cluster.restart());
      await servedAgain("after pg_ctl restart -m fast");
      for (let round = 1; round <= 3; round++) {
        expect(await alive(cluster.terminateBackends())).toBeGreaterThan(0);
        await servedAgain(`after pg_terminate_backend round ${round}`);
      }
      await alive(load.stop());
      expect(exits).toEqual([]);

      // Nothing but 200s, lost races and catalogued 503s, and never a dropped connection.
      const acked = load.creations.filter((c) => c.status === 200);
      const patched = load.patches.filter((p) => p.status === 200);
      expect(load.creations.some((c) => c.status === 503) || load.patches.some((p) => p.status === 503)).toBe(true);
      expectOnly("creations", load.creations, [200, 503]);
      expectOnly("conditional PATCHes", load.patches, [200, 412, 503]);
      expectOnly("reads", load.reads, [200, 503]);
      expectOnly("/readyz", load.readiness, [200, 503]);

      // Both answer at once, and are ready within seconds.
      for (const server of servers) {
        expect((await send(server, { method: "GET", path: "/healthz" })).status).toBe(200);
        await eventually(async () => (await send(server, { method: "GET", path: "/readyz" })).status === 200, {
          what: "/readyz 200",
        });
      }

      // Every acknowledged write is stored exactly once.
      const db = postgresClient(cluster.url);
      db.on("error", () => undefined);
      await db.connect();
      try {
        const plants = new Map(
          (await db.query<{ id: bigint; name: string }>("SELECT id, name FROM plants")).rows.map((r) => [
            String(r.id),
            r.name,
          ]),
        );
        const missing = acked.filter((c) => plants.get(String(c.id)) !== `p${c.id}`).map((c) => c.id);
        expect(missing, "creations answered 200 but not stored").toEqual([]);
        const createdTwice = (
          await db.query<{ plant_id: bigint }>(
            "SELECT plant_id FROM plant_changes WHERE kind = 'plant.created' GROUP BY plant_id HAVING count(*) > 1",
          )
        ).rows;
        expect(createdTwice).toEqual([]);
        const updates = (
          await db.query<{ name: string }>(
            "SELECT data::json->>'name' AS name FROM plant_changes WHERE kind = 'plant.updated' AND plant_id = $1 ORDER BY position",
            [CONTESTED],
          )
        ).rows.map((r) => r.name);
        const times = (name: string) => updates.filter((u) => u === name).length;
        const notOnce = patched.filter((p) => times(p.name) !== 1).map((p) => `${p.name} × ${times(p.name)}`);
        expect(notOnce, "PATCHes answered 200, and how often the change log holds them").toEqual([]);
        expect(new Set(updates).size, "no change applied twice").toBe(updates.length);
        expect(plants.get(CONTESTED)).toBe(updates.at(-1));
        const tokenRows = new Map(
          (
            await db.query<{ id: string; revoked: boolean }>(
              "SELECT id, revoked_at IS NOT NULL AS revoked FROM api_tokens",
            )
          ).rows.map((r) => [r.id, r.revoked]),
        );
        expect(load.tokens.issued.filter((id) => !tokenRows.has(id))).toEqual([]);
        expect(load.tokens.revoked.filter((id) => tokenRows.get(id) !== true)).toEqual([]);
      } finally {
        await db.end();
      }

      // Every acknowledged creation reached the webhook receiver, and each stream hears new changes.
      const delivered = () => new Set(receiver.received.map((r) => /"id":(\d+)/.exec(r.body)?.[1]));
      await eventually(() => acked.every((c) => delivered().has(String(c.id))), {
        what: () =>
          `every acknowledged creation delivered (${acked.filter((c) => !delivered().has(String(c.id))).length} not yet)`,
        timeoutMs: 30_000,
      });
      const marker = await rawRequest(servers[1].url, {
        method: "POST",
        path: "/plants",
        headers: { ...auth, "content-type": "application/json" },
        body: '{"id":-1,"name":"marker"}',
      });
      expect(marker.status).toBe(200);
      for (const [at, stream] of streams.entries()) {
        // A stream the outage ended is resumed from its last event, as EventSource does.
        if (stream.ended)
          stream.client = await openEventStream(servers[at]!.url, {
            token: TOKEN,
            lastEventId: stream.client.lastEventId(),
          });
        const { events } = stream.client;
        await eventually(() => events.some((e) => e.data.includes('"id":-1')), {
          what: `the marker's event on server ${at}'s stream`,
        });
      }

      // The outage's log: one short line per event, and never a driver's connection or its cancel key.
      expect(await Promise.all(servers.map((server) => server.stop()))).toEqual([0, 0]);
      const lines = servers.flatMap((server) =>
        server
          .output()
          .split("\n")
          .filter((line) => line !== ""),
      );
      expect(lines.filter((line) => line.includes("secretKey")).map((line) => line.slice(0, 300))).toEqual([]);
      expect(lines.filter((line) => line.length > 1024).map((line) => line.slice(0, 300))).toEqual([]);
    } finally {
      await traffic?.stop();
      for (const stream of streams) stream.client.close();
      await Promise.all(servers.map((server) => server.stop()));
      await receiver.close();
    }
  }, 120_000);
});
