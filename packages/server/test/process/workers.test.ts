import { spawn } from "node:child_process";

import { eventually } from "@plantstore/test-support/eventually";
import { describe, expect, it } from "vitest";

import { rawRequest } from "../support/harness.ts";
import { BIN, freePort, spawnServe } from "../support/spawned-server.ts";
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
      // The access lines too: three processes write to one stdout, and each line must stay whole.
      PLANTSTORE_LOG_LEVEL: "info",
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
      const lines = server
        .output()
        .split("\n")
        .filter((line) => line.length > 0);
      for (const line of lines) expect(() => JSON.parse(line) as unknown, line).not.toThrow();
      expect(lines.filter((line) => line.includes('"route":"/plants"'))).toHaveLength(900);
    } finally {
      child.kill("SIGKILL");
      await database.dispose();
    }
    expect(server.output()).not.toContain(token);
  });

  it("stops cleanly with exit 0 when the signal comes while the workers are still loading", async () => {
    const database = await createTestDatabase();
    const port = await freePort();
    const child = spawn(process.execPath, [BIN, "serve"], {
      env: {
        ...process.env,
        PLANTSTORE_WORKERS: "2",
        PLANTSTORE_TOKENS: "workers-token",
        DATABASE_URL: database.url,
        PLANTSTORE_LOG_LEVEL: "info",
        PORT: String(port),
        HOST: "127.0.0.1",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
    try {
      // The primary has forked them; they take far longer to load their modules than this takes.
      await eventually(() => output.includes("workers starting"), { what: () => `the primary to fork:\n${output}` });
      child.kill("SIGTERM");
      expect(await exited, output).toBe(0);
      expect(output).not.toContain("did not stop cleanly");
    } finally {
      child.kill("SIGKILL");
      await database.dispose();
    }
  });
});
