import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadConfig, startServer, type Config, type RunningServer } from "@plantstore/server";

export const TOKEN = "t-1";

/**
 * The real server on an ephemeral port with a fresh SQLite file; closing also removes the file.
 * `overrides` change settings a test needs (the browser test's `corsOrigins`).
 */
export async function startRealServer(overrides: Partial<Config> = {}): Promise<RunningServer> {
  const dir = mkdtempSync(join(tmpdir(), "plantstore-client-test-"));
  const running = await startServer({
    config: {
      ...loadConfig({}),
      port: 0,
      host: "127.0.0.1",
      databaseUrl: `sqlite:${join(dir, "x.db")}`,
      tokens: [TOKEN],
      logLevel: "silent",
      ...overrides,
    },
  });
  const close = async () => {
    await running.close();
    rmSync(dir, { recursive: true, force: true });
  };
  return { ...running, close, [Symbol.asyncDispose]: close };
}
