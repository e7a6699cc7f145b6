import { type ChildProcess, spawn } from "node:child_process";
import { createServer } from "node:net";
import { fileURLToPath } from "node:url";

import { eventually } from "@plantstore/test-support/eventually";

import { rawRequest } from "./harness.ts";

/** The built bin (tests that need a real process run `pnpm build` first: turbo's test task does). */
export const BIN = fileURLToPath(new URL("../../dist/bin.js", import.meta.url));

export type SpawnedServer = {
  child: ChildProcess;
  /** Base URL once it listens. */
  url: string;
  /** Everything written to stdout and stderr so far. */
  output(): string;
  /** Resolves with the exit code (null when killed by a signal) and the signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
};

export async function freePort(): Promise<number> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as { port: number };
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return port;
}

/**
 * Starts `plantstore-server serve` as a process with `env` on top of the test's environment and
 * waits until GET /healthz answers. Without `port` it takes a free one (so it needs no log line).
 */
export async function spawnServe(
  env: Record<string, string>,
  options: { port?: number; timeoutMs?: number } = {},
): Promise<SpawnedServer> {
  const port = options.port ?? (await freePort());
  const child = spawn(process.execPath, [BIN, "serve"], {
    env: { ...process.env, PLANTSTORE_LOG_LEVEL: "info", ...env, PORT: String(port), HOST: "127.0.0.1" },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.once("exit", (code, signal) => resolve({ code, signal })),
  );
  let url = port === 0 ? undefined : `http://127.0.0.1:${port}`;
  let gone = false;
  void exited.then(() => (gone = true));
  const answered = await eventually(
    async () => {
      if (gone) return "exited";
      url ??= /"url":"(http:\/\/[^"]+)"/.exec(output)?.[1];
      if (url === undefined) return false;
      const r = await rawRequest(url, { method: "GET", path: "/healthz", headers: { connection: "close" } });
      return r.status === 200 && "answered";
    },
    { what: () => `the server to answer GET /healthz:\n${output}`, timeoutMs: options.timeoutMs ?? 20_000 },
  ).catch((error: unknown) => {
    child.kill("SIGKILL");
    throw error;
  });
  if (answered === "exited" || url === undefined) throw new Error(`the server exited before it answered:\n${output}`);
  return { child, url, output: () => output, exited };
}
