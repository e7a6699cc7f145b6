import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

import { describe, it } from "vitest";

import { rawRequest } from "../support/harness.ts";
import { createTestDatabase, TEST_BACKEND } from "../support/test-database.ts";

const BIN = fileURLToPath(new URL("../../dist/bin.js", import.meta.url));

// Side by side: each test only waits on its own process.
describe.concurrent("plantstore-server serve (the built bin, as a process)", () => {
  it(`serves POST /plants on ${TEST_BACKEND}, logs JSON without the token, and exits 0 on SIGTERM`, async ({
    expect,
  }) => {
    const database = await createTestDatabase();
    const token = "bin-test-secret-token";
    const child = spawn(process.execPath, [BIN, "serve", "--port", "0"], {
      env: { ...process.env, PLANTSTORE_TOKENS: token, DATABASE_URL: database.url, PLANTSTORE_LOG_LEVEL: "info" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        // eslint-disable-next-line no-restricted-syntax -- a guard that fails a start that never says it listens
        const timer = setTimeout(() => reject(new Error(`no listening line in: ${output}`)), 15_000);
        child.stdout.on("data", () => {
          const match = /"url":"(http:\/\/[^"]+)"/.exec(output);
          if (match?.[1] !== undefined) {
            clearTimeout(timer);
            resolve(match[1]);
          }
        });
        child.on("exit", (code) => reject(new Error(`exited ${code}: ${output}`)));
      });
      const created = await rawRequest(url, {
        method: "POST",
        path: "/plants",
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
        body: '{"id":9223372036854775807,"name":"Fern"}',
      });
      expect(created.status).toBe(200);
      expect(created.text).toBe('{"name":"Fern"}');
      const exit = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
      child.kill("SIGTERM");
      expect(await exit).toBe(0);
      for (const line of output.trim().split("\n")) expect(() => JSON.parse(line) as unknown).not.toThrow();
      expect(output).not.toContain(token);
    } finally {
      child.kill("SIGKILL");
      await database.dispose();
    }
  });

  it("exits 2 on bad usage", async ({ expect }) => {
    const child = spawn(process.execPath, [BIN, "serve", "--no-such-flag"], { stdio: ["ignore", "pipe", "pipe"] });
    const code = await new Promise<number | null>((resolve) => child.on("exit", (c) => resolve(c)));
    expect(code).toBe(2);
  });
});
