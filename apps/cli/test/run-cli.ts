import { spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { createServer, request } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";

import type { Config, RunningServer } from "@plantstore/server";
import * as plantStoreServer from "@plantstore/server";
import { type RealServer, startRealServer } from "@plantstore/test-support/real-server";
import { checkAnswer, fetchContracts } from "@plantstore/test-support/response-contract";

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
    child.on("close", (code) => {
      const seen = violations.splice(0);
      if (seen.length === 0) resolve({ code, stdout, stderr });
      else
        reject(new AggregateError(seen, `answers that break the OpenAPI documents:\n${seen.map(String).join("\n")}`));
    });
  });
}

/** What the proxies found wrong; `runCli` rejects with them once the CLI has exited. */
const violations: unknown[] = [];

/**
 * `running` behind a checking proxy: the CLI is a separate process, so its answers are checked on
 * the way, each against the seed and the server's served `/openapi.json`, and passed on unchanged.
 * `url` is the proxy's; closing closes both, so a closed server's URL refuses connections.
 */
export async function behindContractProxy<Server extends { url: string; close(): Promise<void> }>(
  running: Server,
): Promise<Server & AsyncDisposable> {
  const contracts = await fetchContracts(running.url);
  const proxy = createServer((req, res) => {
    // Hop-by-hop: each side keeps its own connection.
    const { connection: _ignored, ...headers } = req.headers;
    const upstream = request(`${running.url}${req.url}`, { method: req.method, headers, agent: false }, (answer) => {
      const chunks: Buffer[] = [];
      answer.on("data", (chunk: Buffer) => chunks.push(chunk));
      answer.on("end", () => {
        const body = Buffer.concat(chunks);
        const status = answer.statusCode ?? 0;
        try {
          const contentType = answer.headers["content-type"] ?? null;
          checkAnswer(contracts, {
            method: req.method ?? "",
            path: req.url ?? "",
            status,
            contentType,
            body: body.toString("utf8"),
          });
        } catch (error) {
          violations.push(error);
        }
        const { connection: _dropped, "transfer-encoding": _framing, ...passed } = answer.headers;
        res.writeHead(status, { ...passed, "content-length": body.length }).end(body);
      });
    });
    upstream.on("error", () => res.destroy());
    req.pipe(upstream);
  });
  await new Promise<void>((resolve) => proxy.listen(0, "127.0.0.1", resolve));
  const close = async () => {
    proxy.closeAllConnections();
    await new Promise<void>((resolve) => proxy.close(() => resolve()));
    await running.close();
  };
  return {
    ...running,
    url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    close,
    [Symbol.asyncDispose]: close,
  };
}

/**
 * The real server (`startRealServer`: an ephemeral port, a fresh SQLite file, the test tokens) with
 * `config` on top, behind a checking proxy; closing closes both and removes the file.
 */
export async function startCheckedServer(config: Partial<Config> = {}): Promise<RealServer<RunningServer>> {
  return behindContractProxy(await startRealServer(plantStoreServer, { config }));
}

/**
 * A URL where nothing answers: a port that was just listened on and closed, so a connection is
 * refused at once (starting a server only to close it cost a second per test).
 */
export async function closedUrl(): Promise<string> {
  const probe = createServer();
  await new Promise<void>((resolve) => probe.listen(0, "127.0.0.1", resolve));
  const { port } = probe.address() as AddressInfo;
  await new Promise<void>((resolve) => probe.close(() => resolve()));
  return `http://127.0.0.1:${port}`;
}
