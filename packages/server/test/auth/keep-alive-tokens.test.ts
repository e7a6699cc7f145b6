import { Agent, request } from "node:http";

import { eventually } from "@plantstore/test-support/eventually";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { startTestServer, type TestServer, TOKEN } from "../support/harness.ts";
import { databaseUrlOf, issueToken, revokeToken } from "../support/token-helpers.ts";

/**
 * A connection reuses the digest of the token it presented last (http/connection-token-digest.ts).
 * These send every request over one keep-alive connection and check that a token is still judged
 * by itself: a different token after a valid one (even one differing in its last character only)
 * is refused, a valid one after a refused one is served, and a token revoked while its connection
 * stays open is refused there too.
 */
let server: TestServer;
const agent = new Agent({ keepAlive: true, maxSockets: 1 });
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  agent.destroy();
  await server.close();
});

type Answer = { status: number; reused: boolean };

/** GET /plants with `token` over the one pooled connection. */
function list(token: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const sent = request(`${server.url}/plants`, { agent, headers: { authorization: `Bearer ${token}` } }, (answer) => {
      answer.resume();
      answer.on("end", () => resolve({ status: answer.statusCode ?? 0, reused: sent.reusedSocket }));
    });
    sent.on("error", reject);
    sent.end();
  });
}

const lastCharacterChanged = (token: string) => token.slice(0, -1) + (token.endsWith("a") ? "b" : "a");

describe("tokens on one keep-alive connection", () => {
  it("judges each token by itself, whatever the connection presented before", async () => {
    expect((await list(TOKEN)).status).toBe(200);
    const answers = [
      await list(lastCharacterChanged(TOKEN)),
      await list(TOKEN),
      await list(`${TOKEN}x`),
      await list(TOKEN.slice(0, -1)),
      await list(TOKEN),
    ];
    expect(answers).toEqual([
      { status: 401, reused: true },
      { status: 200, reused: true },
      { status: 401, reused: true },
      { status: 401, reused: true },
      { status: 200, reused: true },
    ]);
  });

  it("refuses a token revoked while its connection stays open", async () => {
    const { id, token } = await issueToken(databaseUrlOf(server));
    await eventually(async () => (await list(token)).status === 200, { what: "the issued token served" });
    expect(await list(token)).toEqual({ status: 200, reused: true });
    await revokeToken(databaseUrlOf(server), id);
    await eventually(async () => (await list(token)).status === 401, {
      what: "the revoked token refused on the same connection",
      timeoutMs: 2_000,
    });
    expect(await list(token)).toEqual({ status: 401, reused: true });
    expect(await list(TOKEN)).toEqual({ status: 200, reused: true });
  });
});
