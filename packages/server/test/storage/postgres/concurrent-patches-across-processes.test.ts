import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { rawRequest } from "../../support/harness.ts";
import { runBin, type ServerProcess, startServerProcess } from "../../support/processes.ts";
import { createTestDatabase, type TestDatabase } from "../../support/test-database.ts";

const TOKEN = "concurrent-patches-token-0123456789abcdef";
const auth = { authorization: `Bearer ${TOKEN}` };

let database: TestDatabase;
let servers: ServerProcess[] = [];
beforeAll(async () => {
  database = await createTestDatabase("postgres");
  const env = { DATABASE_URL: database.url, PLANTSTORE_TOKENS: TOKEN, PLANTSTORE_PG_POOL_SIZE: "5" };
  expect((await runBin(["migrate"], env)).code).toBe(0);
  servers = await Promise.all([startServerProcess(env), startServerProcess(env)]);
});
afterAll(async () => {
  await Promise.all(servers.map((server) => server.stop()));
  await database?.dispose();
});

describe("50 concurrent PATCHes with the same ETag, spread over two processes on one PostgreSQL", () => {
  it("answer exactly one 200 and 49 × 412, and both processes read the winner's plant", async () => {
    const [a, b] = servers as [ServerProcess, ServerProcess];
    const created = await rawRequest(a.url, {
      method: "POST",
      path: "/plants",
      headers: { ...auth, "content-type": "application/json" },
      body: '{"id":9007199254740993,"name":"Contested"}',
    });
    expect(created.status).toBe(200);
    const read = (server: ServerProcess) =>
      rawRequest(server.url, {
        method: "GET",
        path: "/plants/9007199254740993",
        contractPath: "/plants/{id}",
        headers: auth,
      });
    const etag = (await read(b)).headers["etag"] as string;
    expect(etag).toBe((await read(a)).headers["etag"]);

    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        rawRequest(servers[i % 2]!.url, {
          method: "PATCH",
          path: "/plants/9007199254740993",
          contractPath: "/plants/{id}",
          headers: { ...auth, "content-type": "application/merge-patch+json", "if-match": etag },
          body: JSON.stringify({ name: `writer ${i}` }),
        }),
      ),
    );
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, ...Array<number>(49).fill(412)]);
    const winner = answers.find((answer) => answer.status === 200)!;
    for (const server of servers) {
      const stored = await read(server);
      expect(stored.text).toBe(winner.text);
      expect(stored.headers["etag"]).toBe(winner.headers["etag"]);
    }
    for (const answer of answers) expect(answer.headers["etag"]).toBe(winner.headers["etag"]);
  });
});
