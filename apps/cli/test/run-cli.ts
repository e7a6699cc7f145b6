import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { loadConfig, startServer, type RunningServer } from "@plantstore/server";

export const TOKEN = "t-1";

/** The built CLI, as users run it; turbo builds it before `test`. */
const BIN = fileURLToPath(new URL("../dist/bin.js", import.meta.url));

export type CliResult = { code: number | null; stdout: string; stderr: string };

/**
 * Runs `node dist/bin.js <args>` with the caller's PLANTSTORE_* variables removed (turbo passes
 * them through), plus `env`.
 */
export function runCli(args: readonly string[], env: Record<string, string> = {}): Promise<CliResult> {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run \`pnpm --filter @plantstore/cli build\` first`);
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("PLANTSTORE_")));
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], { env: { ...inherited, ...env }, stdio: "pipe" });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    child.on("error", reject);
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
}

/** The real server on an ephemeral port with a fresh SQLite file; closing also removes the file. */
export async function startRealServer(): Promise<RunningServer> {
  const dir = mkdtempSync(join(tmpdir(), "plantstore-cli-test-"));
  const running = await startServer({
    config: {
      ...loadConfig({}),
      port: 0,
      host: "127.0.0.1",
      databaseUrl: `sqlite:${join(dir, "x.db")}`,
      tokens: [TOKEN],
      logLevel: "silent",
    },
  });
  const close = async () => {
    await running.close();
    rmSync(dir, { recursive: true, force: true });
  };
  return { ...running, close, [Symbol.asyncDispose]: close };
}
