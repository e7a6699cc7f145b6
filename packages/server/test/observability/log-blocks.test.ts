import { eventually } from "@plantstore/test-support/eventually";
import { afterEach, describe, expect, it } from "vitest";

import { type SpawnedServer, spawnServe } from "../support/spawned-server.ts";
import { createTestDatabase } from "../support/test-database.ts";

/**
 * The log goes to stdout in blocks (src/logger.ts): these check what an operator reading the
 * stream relies on. A quiet server's line still shows up promptly, a busy server's lines are whole
 * (a block never splits one), and a SIGTERM loses none of them.
 */
const TOKEN = "log-blocks-test-token-0123456789abcdef";

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function serve(): Promise<SpawnedServer> {
  const database = await createTestDatabase();
  cleanups.push(() => database.dispose());
  const server = await spawnServe({ DATABASE_URL: database.url, PLANTSTORE_TOKENS: TOKEN });
  cleanups.push(() => void server.child.kill("SIGKILL"));
  return server;
}

function create(server: SpawnedServer, id: number, requestId: string): Promise<Response> {
  return fetch(`${server.url}/plants`, {
    method: "POST",
    headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", "x-request-id": requestId },
    body: JSON.stringify({ id, name: "Fern" }),
  });
}

const accessLinesOf = (output: string, prefix: string) =>
  output.split("\n").filter((line) => line.includes(`"reqId":"${prefix}`));

describe("the log on stdout", () => {
  it("writes a quiet server's access line within a fraction of a second, not when a block fills", async () => {
    const server = await serve();
    expect((await create(server, 1, "quiet-1")).status).toBe(200);
    const sent = Date.now();
    await eventually(() => accessLinesOf(server.output(), "quiet-").length === 1, {
      what: () => `the access line of quiet-1; output:\n${server.output()}`,
      timeoutMs: 2_000,
    });
    // The block is written at least every 100 ms; the rest is the poll's and the pipe's slack.
    expect(Date.now() - sent).toBeLessThan(1_500);
  });

  it("writes every line whole under load, and all of them by the time SIGTERM has ended the process", async () => {
    const server = await serve();
    const count = 400;
    for (let start = 0; start < count; start += 25) {
      const answers = await Promise.all(
        Array.from({ length: 25 }, (_, i) => create(server, 1_000 + start + i, `busy-${start + i}`)),
      );
      expect(answers.map((answer) => answer.status)).toEqual(Array(25).fill(200));
    }
    server.child.kill("SIGTERM");
    expect(await server.exited).toEqual({ code: 0, signal: null });

    const lines = server
      .output()
      .split("\n")
      .filter((line) => line.length > 0);
    for (const line of lines) expect(() => JSON.parse(line) as unknown, line).not.toThrow();
    const ids = accessLinesOf(server.output(), "busy-").map((line) => (JSON.parse(line) as { reqId: string }).reqId);
    expect(new Set(ids).size).toBe(count);
  });
});
