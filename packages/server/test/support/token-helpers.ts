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

/**
 * `token` with its last character changed: well-formed, and never the token itself (appending a
 * fixed "x" gave back the valid token whenever it already ended in "x", one run in 64).
 */
export function tampered(token: string): string {
  return token.slice(0, -1) + (token.endsWith("x") ? "y" : "x");
}
