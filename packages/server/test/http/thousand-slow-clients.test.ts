import { Agent } from "node:http";

import { eventually } from "@plantstore/test-support/eventually";
import { describe, expect, it } from "vitest";

import { rawRequest, startTestServer, TOKEN } from "../support/harness.ts";
import { postPlant, randomPlant } from "../support/load.ts";
import { openRaw, postHead, trickle } from "../support/raw-socket.ts";

// A file of its own: it waits out its connections' 10 s timeouts, which the other slow-client
// tests (slow-clients.test.ts) need not wait behind.
describe("a thousand slow and idle clients", () => {
  it("a thousand idle or trickling connections do not stop service to others, and each is closed by its timeout", async () => {
    // Long enough for the service below to finish while every slow connection is still open (it
    // is asserted; it took 3–4 s on a busy 2-core machine, and 6.8–7.8 s on 2026-11-28, when the
    // machine ran at half that speed with three other test files beside this one), short enough
    // not to wait for nothing.
    const headersTimeoutMs = 10_000;
    await using server = await startTestServer({
      headersTimeoutMs,
      requestTimeoutMs: headersTimeoutMs + 1_000,
      keepAliveTimeoutMs: 1_000,
      // The subject is the connections, not the disk: with an fsync per group commit, the 30
      // rounds of creations below waited on a disk the other test files were syncing too, and took
      // 12.6 s (2026-11-28). Durable commits are the crash-safety tests' subject.
      durability: "normal",
    });
    const opened = Date.now();
    // 400 that never send a byte, 300 that trickle their headers, 200 that trickle their body,
    // 100 keep-alive connections left idle after one answer.
    const silent = await Promise.all(Array.from({ length: 400 }, () => openRaw(server.port)));
    const slowHeaders = await Promise.all(Array.from({ length: 300 }, () => openRaw(server.port)));
    for (const client of slowHeaders) trickle(client, postHead(TOKEN, 20), 200);
    const slowBodies = await Promise.all(Array.from({ length: 200 }, () => openRaw(server.port)));
    for (const client of slowBodies) {
      client.write(postHead(TOKEN, 40));
      trickle(client, '{"id":1,"name":"slow-slow-slow-slow"} ', 250);
    }
    const idle = await Promise.all(
      Array.from({ length: 100 }, async () => {
        const client = await openRaw(server.port);
        client.write("GET /healthz HTTP/1.1\r\nHost: plantstore\r\n\r\n");
        return client;
      }),
    );

    // Meanwhile, others are served: 300 creations over 10 connections, every one exact.
    const agent = new Agent({ keepAlive: true, maxSockets: 10 });
    const plants = Array.from({ length: 300 }, () => randomPlant());
    const outcomes = [];
    for (let i = 0; i < plants.length; i += 10) {
      outcomes.push(...(await Promise.all(plants.slice(i, i + 10).map((p) => postPlant(server.url, TOKEN, agent, p)))));
    }
    agent.destroy();
    for (const o of outcomes) expect(o).toMatchObject({ kind: "answered", status: 200, text: o.plant.answer });
    // Service did not wait for those connections to be cleared: it was done before their timeouts,
    // with every one of them still open.
    expect(Date.now() - opened).toBeLessThan(headersTimeoutMs);
    expect([...silent, ...slowHeaders, ...slowBodies].filter((c) => c.socket.destroyed)).toHaveLength(0);

    // Then each kind is closed by its own bound, the first two with a 408 Error body.
    await eventually(() => idle.every((c) => c.socket.destroyed), { what: "idle keep-alive connections closed" });
    for (const client of idle) expect(await client.closed).toEqual({ error: undefined });
    const hostile = [...silent, ...slowHeaders, ...slowBodies];
    await eventually(() => hostile.every((c) => c.socket.destroyed), {
      what: () => `every slow connection closed (${hostile.filter((c) => !c.socket.destroyed).length} open)`,
      timeoutMs: 20_000,
    });
    for (const client of [...slowHeaders, ...slowBodies]) {
      const answers = client.answers();
      expect(answers).toHaveLength(1);
      expect(answers[0]!.status).toBe(408);
      expect(JSON.parse(answers[0]!.body)).toEqual({ error: 40800, message: expect.any(String) });
    }
    for (const client of silent) {
      // Nothing was sent, so there is no request to answer; Node's headers timeout still closes it (408).
      expect(client.answers().every((a) => a.status === 408)).toBe(true);
    }
    expect((await rawRequest(server.url, { method: "GET", path: "/healthz" })).status).toBe(200);
  }, 60_000);
});
