import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";

import { PinoPretty } from "pino-pretty";

import { noteDatabase } from "./cli/database-note.ts";
import { loadConfig } from "./config.ts";
import { createLogger } from "./logger.ts";
import { startServer } from "./server.ts";

/**
 * `pnpm turbo dev`: the server on SQLite under ./data, restarted by `node --watch-path` when our sources (this package and @plantstore/schema) change.
 * Only source folders are watched: under `--watch` every imported file counts, and a `pnpm install`
 * anywhere on the machine re-links files in the shared store (an inode change), restarting the server.
 * A development token is made once and kept in ./data/dev-token so restarts keep the same curl line.
 * Logs are pino-pretty's readable lines here (a devDependency: the published server logs JSON lines).
 */
const TOKEN_FILE = resolve("data/dev-token");

function devToken(): string {
  if (existsSync(TOKEN_FILE)) return readFileSync(TOKEN_FILE, "utf8").trim();
  const token = `ps_dev_${randomBytes(32).toString("base64url")}`;
  mkdirSync(dirname(TOKEN_FILE), { recursive: true });
  writeFileSync(TOKEN_FILE, `${token}\n`, { mode: 0o600 });
  return token;
}

const base = loadConfig();
const token = devToken();
const config = { ...base, tokens: [...base.tokens, token] };
// By its absolute path: admin commands run from another folder resolve a relative one elsewhere.
const { database } = noteDatabase(config.databaseUrl);
// Synchronous, so the lines of a stop are printed before the process exits.
const readable = PinoPretty({
  colorize: process.stdout.isTTY,
  sync: true,
  singleLine: true,
  ignore: "pid,hostname,service",
  translateTime: "SYS:HH:MM:ss.l",
});
const running = await startServer({ config, logger: createLogger(config.logLevel, readable) });

process.stdout.write(
  [
    "",
    `Plant Store (development) on ${running.url}, database ${database}`,
    `OpenAPI document: ${running.url}/openapi.json`,
    `API reference:    ${running.url}/docs   (Authorize with the token in the curl line below)`,
    "Try it:",
    `  curl -sS -X POST ${running.url}/plants -H 'Authorization: Bearer ${token}' -H 'Content-Type: application/json' -d '{"id":1,"name":"Fern","tag":"fern"}'`,
    "",
  ].join("\n"),
);

const stop = () =>
  void running.close().then(
    () => process.exit(0),
    () => process.exit(1),
  );
process.once("SIGTERM", stop);
process.once("SIGINT", stop);
