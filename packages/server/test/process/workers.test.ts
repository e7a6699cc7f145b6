import { spawn } from "node:child_process";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";

import { describe, expect, it } from "vitest";

import { rawRequest } from "../support/harness.ts";
import { createTestDatabase, TEST_BACKEND } from "../support/test-database.ts";

const BIN = fileURLToPath(new URL("../../dist/bin.js", import.meta.url));

async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

async function waitHealthy(url: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    try {
      if ((await rawRequest(url, { method: "GET", path: "/healthz" })).status === 200) return;
    } catch {
      // not listening yet
    }
    if (Date.now() > deadline) throw new Error("server did not become healthy");
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe(`plantstore-server serve with PLANTSTORE_WORKERS=2 on one ${TEST_BACKEND} database`, () => {
  it("stores every plant exactly once across both workers and stops cleanly", async () => {
    const database = await createTestDatabase();
    const port = await freePort();
    const token = "workers-token";
    const child = spawn(process.execPath, [BIN, "serve"], {
      env: {
        ...process.env,
        PORT: String(port),
        PLANTSTORE_WORKERS: "2",
        PLANTSTORE_TOKENS: token,
        DATABASE_URL: database.url,
        PLANTSTORE_PG_POOL_SIZE: "4",
        PLANTSTORE_LOG_LEVEL: "warn",
      },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (c: Buffer) => (output += c.toString()));
    child.stderr.on("data", (c: Buffer) => (output += c.toString()));
    const url = `http://127.0.0.1:${port}`;
    try {
      await waitHealthy(url);
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
      const exit = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
      child.kill("SIGTERM");
      expect(await exit).toBe(0);
      expect(await database.count()).toBe(300);
    } finally {
      child.kill("SIGKILL");
      await database.dispose();
    }
    expect(output).not.toContain(token);
  });
});
