import { spawn } from "node:child_process";
import { once } from "node:events";
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";

import { type NewOpaqueToken, newOpaqueToken } from "../../src/auth/opaque-token.ts";
import { openTokenStore } from "../../src/storage/open-store.ts";
import type { TokenRecord } from "../../src/storage/token-store.ts";

const BIN = fileURLToPath(new URL("../../dist/bin.js", import.meta.url));

/** The DATABASE_URL a test server runs on (SQLite or PostgreSQL, whichever backend this pass tests). */
export function databaseUrlOf(server: { database: { url: string } }): string {
  return server.database.url;
}

/** Issues a token straight into the database, as `tokens create` does (another connection, like another process). */
export async function issueToken(
  databaseUrl: string,
  options: { name?: string; scopes?: string[]; expiresAt?: number | null; issued?: NewOpaqueToken } = {},
): Promise<{ id: string; token: string }> {
  const store = await openTokenStore(databaseUrl, "admin");
  try {
    const issued = options.issued ?? newOpaqueToken();
    await store.createToken({
      id: issued.id,
      name: options.name ?? `test-${issued.id}`,
      scopes: options.scopes ?? ["plants:read", "plants:write"],
      secretHash: issued.secretHash,
      createdAt: Date.now(),
      expiresAt: options.expiresAt ?? null,
    });
    return { id: issued.id, token: issued.token };
  } finally {
    await store.close();
  }
}

export async function revokeToken(databaseUrl: string, idOrName: string): Promise<TokenRecord | undefined> {
  const store = await openTokenStore(databaseUrl, "admin");
  try {
    return await store.revokeToken(idOrName, Date.now());
  } finally {
    await store.close();
  }
}

export async function listTokens(databaseUrl: string): Promise<TokenRecord[]> {
  const store = await openTokenStore(databaseUrl, "admin");
  try {
    return await store.listTokens();
  } finally {
    await store.close();
  }
}

/** Runs the built `plantstore-server` with arguments; resolves with its exit code and output. */
export function runBin(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c: Buffer) => (stdout += c.toString()));
    child.stderr.on("data", (c: Buffer) => (stderr += c.toString()));
    child.on("error", reject);
    child.on("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

export type ServerProcess = { url: string; output: () => string; stop(): Promise<number | null> };

/** `plantstore-server serve --port 0` as its own process; resolves once it logs its URL. */
export async function startServerProcess(env: Record<string, string>): Promise<ServerProcess> {
  const child = spawn(process.execPath, [BIN, "serve", "--port", "0"], {
    env: { ...process.env, PLANTSTORE_LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  child.stdout.on("data", (c: Buffer) => (output += c.toString()));
  child.stderr.on("data", (c: Buffer) => (output += c.toString()));
  const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
  const url = await new Promise<string>((resolve, reject) => {
    // eslint-disable-next-line no-restricted-syntax -- a guard that fails a start that never says it listens
    const timer = setTimeout(() => reject(new Error(`no listening line in: ${output}`)), 20_000);
    const look = () => {
      const match = /"url":"(http:\/\/[^"]+)"/.exec(output);
      if (match?.[1] !== undefined) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    };
    child.stdout.on("data", look);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`exited ${code}: ${output}`));
    });
  });
  return {
    url,
    output: () => output,
    async stop() {
      if (child.exitCode === null) child.kill("SIGTERM");
      // eslint-disable-next-line no-restricted-syntax -- a guard that kills a process a SIGTERM did not stop
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      const code = await exited;
      clearTimeout(timer);
      return code;
    },
  };
}

/** A JWKS endpoint on loopback that counts its fetches: each one is a key lookup a signature check needed. */
export async function startJwksServer(keys: unknown[]): Promise<{ url: string; fetches(): number; close(): void }> {
  let fetches = 0;
  const server = createServer((_, res) => {
    fetches++;
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ keys }));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks`,
    fetches: () => fetches,
    close: () => {
      server.close();
      server.closeAllConnections();
    },
  };
}
