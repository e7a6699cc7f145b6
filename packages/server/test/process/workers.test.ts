import { describe, expect, it } from "vitest";

import { rawRequest } from "../support/harness.ts";
import { spawnServe } from "../support/spawned-server.ts";
import { createTestDatabase, TEST_BACKEND } from "../support/test-database.ts";

describe(`plantstore-server serve with PLANTSTORE_WORKERS=2 on one ${TEST_BACKEND} database`, () => {
  it("stores every plant exactly once across both workers and stops cleanly", async () => {
    const database = await createTestDatabase();
    const token = "workers-token";
    const server = await spawnServe({
      PLANTSTORE_WORKERS: "2",
      PLANTSTORE_TOKENS: token,
      DATABASE_URL: database.url,
      PLANTSTORE_PG_POOL_SIZE: "4",
      PLANTSTORE_LOG_LEVEL: "warn",
    }).catch(async (error: unknown) => {
      await database.dispose();
      throw error;
    });
    const { url, child } = server;
    try {
      const send = (id: number, name: string) =>
        rawRequest(url, {
          method: "POST",
          path: "/plants",
          headers: { authorization: `Bearer ${token}`, "content-type": "application/json", connection: "close" },
          body: JSON.stringify({ id, name }),
        });
      // 300 distinct ids, each also sent a second time identically and once with another name.
      const requests = Array.from({ length: 300 }, (_, i) => [
        send(i, "same"),
        send(i, "same"),
        send(i, "other"),
      ]).flat();
      const statuses = (await Promise.all(requests)).map((r) => r.status);
      for (let i = 0; i < 300; i++) {
        const trio = statuses.slice(i * 3, i * 3 + 3).sort();
        // Whichever of "same"/"other" commits first wins; the loser answers 409, a replay 200.
        expect([
          [200, 200, 409],
          [200, 409, 409],
        ]).toContainEqual(trio);
      }
      child.kill("SIGTERM");
      expect((await server.exited).code, server.output()).toBe(0);
      expect(await database.count()).toBe(300);
    } finally {
      child.kill("SIGKILL");
      await database.dispose();
    }
    expect(server.output()).not.toContain(token);
  });
});
