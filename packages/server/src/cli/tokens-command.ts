import type { Command } from "commander";

import { newOpaqueToken } from "../auth/opaque-token.ts";
import { ALL_SCOPES } from "../auth/principal.ts";
import { openStore, openTokenStore } from "../storage/open-store.ts";
import type { TokenRecord, TokenStore } from "../storage/token-store.ts";
import { closingAfter, configFrom, databaseUrlOption } from "./command-config.ts";
import { openNoted } from "./database-note.ts";

type DbOptions = { databaseUrl?: string };

const UNITS_MS: Record<string, number> = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 };

/** `30d`, `12h`, `90m`, `3600s`, `2w`: a positive whole number and a unit. */
function parseDuration(text: string): number {
  const match = /^([1-9]\d{0,5})([smhdw])$/.exec(text);
  if (match === null)
    throw new Error(`--expires-in must be a number and a unit (s, m, h, d, w), e.g. 30d; got ${JSON.stringify(text)}`);
  return Number(match[1]) * UNITS_MS[match[2]!]!;
}

/** Comma- or space-separated scopes, each one this version knows. */
function parseScopes(text: string): string[] {
  const scopes = [...new Set(text.split(/[\s,]+/).filter((s) => s.length > 0))];
  const unknown = scopes.filter((s) => !(ALL_SCOPES as readonly string[]).includes(s));
  if (scopes.length === 0 || unknown.length > 0) {
    throw new Error(
      `--scopes must list one or more of ${ALL_SCOPES.join(", ")}${unknown.length > 0 ? `; unknown: ${unknown.join(", ")}` : ""}`,
    );
  }
  return scopes;
}

function checkName(name: string): string {
  if (name.length === 0 || name.length > 100 || /[\p{Cc}]/u.test(name)) {
    throw new Error("--name must be 1 to 100 characters without control characters");
  }
  return name;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const day = (ms: number | null, none: string) =>
  ms === null ? none : new Date(ms).toISOString().replace(/\.\d{3}Z$/, "Z");

function status(token: TokenRecord, now: number): "active" | "revoked" | "expired" {
  if (token.revokedAt !== null) return "revoked";
  if (token.expiresAt !== null && token.expiresAt <= now) return "expired";
  return "active";
}

/** The JSON shape of a token in `list --json`, `create --json` and `revoke --json` (never the secret or its digest). */
function describe(token: TokenRecord, now: number) {
  return {
    id: token.id,
    name: token.name,
    scopes: token.scopes,
    status: status(token, now),
    createdAt: iso(token.createdAt),
    expiresAt: iso(token.expiresAt),
    revokedAt: iso(token.revokedAt),
    lastUsedAt: iso(token.lastUsedAt),
  };
}

/** Plain columns, padded to the widest cell. */
function table(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => r[i]!.length)));
  return rows
    .map((r) =>
      r
        .map((cell, i) => cell.padEnd(widths[i]!))
        .join("  ")
        .trimEnd(),
    )
    .join("\n");
}

/**
 * `plantstore-server tokens create|list|revoke`: issue, inspect and revoke API tokens in the
 * configured database, beside running servers (they notice within a second). Run where the
 * database is: it is the administrator's tool, not an API.
 */
export function addTokensCommand(program: Command): void {
  const withStore = async <T>(options: DbOptions, work: (store: TokenStore) => Promise<T>): Promise<T> => {
    const { databaseUrl, postgres } = configFrom(options);
    if (databaseUrl === "sqlite::memory:")
      throw new Error("tokens commands need a database the server also uses, not sqlite::memory:");
    // Applies pending migrations first, as the server would.
    await (await openNoted(databaseUrl, () => openStore(databaseUrl, { postgres }))).close();
    return closingAfter(await openTokenStore(databaseUrl, "admin", { postgres }), work);
  };
  const out = (text: string) => process.stdout.write(`${text}\n`);

  const tokens = program.command("tokens").description("Issue, list and revoke API tokens (ps_…).");
  const dbOption = () => databaseUrlOption("the server's database: sqlite:<path> or postgres://…");

  tokens
    .command("create")
    .description("Issue a token. It is printed once, on stdout, and never stored: only its SHA-256 digest is.")
    .requiredOption("--name <label>", "what the token is for, e.g. ci-importer (unique among active tokens)")
    .requiredOption("--scopes <list>", `comma-separated: ${ALL_SCOPES.join(", ")}`)
    .option("--expires-in <duration>", "lifetime, e.g. 30d, 12h, 90m (default: never expires)")
    .addOption(dbOption())
    .option("--json", "print the token and its details as JSON")
    .action(async (options: DbOptions & { name: string; scopes: string; expiresIn?: string; json?: boolean }) => {
      const name = checkName(options.name);
      const scopes = parseScopes(options.scopes);
      const now = Date.now();
      const expiresAt = options.expiresIn === undefined ? null : now + parseDuration(options.expiresIn);
      const issued = newOpaqueToken();
      await withStore(options, (store) =>
        store.createToken({ id: issued.id, name, scopes, secretHash: issued.secretHash, createdAt: now, expiresAt }),
      );
      const record: TokenRecord = {
        id: issued.id,
        name,
        scopes,
        createdAt: now,
        expiresAt,
        revokedAt: null,
        lastUsedAt: null,
      };
      if (options.json === true) {
        out(JSON.stringify({ ...describe(record, now), token: issued.token }));
        return;
      }
      // The token alone on stdout (so `$(… tokens create …)` captures it); the rest on stderr.
      out(issued.token);
      process.stderr.write(
        `created token ${issued.id} "${name}" with ${scopes.join(" ")}, ${expiresAt === null ? "never expires" : `expires ${day(expiresAt, "")}`}.\n` +
          "This is the only time the token is shown: store it now.\n",
      );
    });

  tokens
    .command("list")
    .description("List tokens: id, name, scopes, created, expires, last used, status. Never the secret.")
    .addOption(dbOption())
    .option("--json", "machine-readable output")
    .action(async (options: DbOptions & { json?: boolean }) => {
      const list = await withStore(options, (store) => store.listTokens());
      const now = Date.now();
      if (options.json === true) {
        out(JSON.stringify(list.map((t) => describe(t, now))));
        return;
      }
      if (list.length === 0) {
        out("no tokens");
        return;
      }
      out(
        table([
          ["ID", "NAME", "SCOPES", "CREATED", "EXPIRES", "LAST USED", "STATUS"],
          ...list.map((t) => [
            t.id,
            t.name,
            t.scopes.join(","),
            day(t.createdAt, ""),
            day(t.expiresAt, "never"),
            day(t.lastUsedAt, "never"),
            status(t, now),
          ]),
        ]),
      );
    });

  tokens
    .command("revoke")
    .description("Revoke a token by id or by name; every server refuses it within a second.")
    .argument("<id-or-name>", "the token's id (from `tokens list`) or the name of an active token")
    .addOption(dbOption())
    .option("--json", "machine-readable output")
    .action(async (idOrName: string, options: DbOptions & { json?: boolean }) => {
      const now = Date.now();
      const token = await withStore(options, (store) => store.revokeToken(idOrName, now));
      if (token === undefined) throw new Error(`no token with id or active name ${JSON.stringify(idOrName)}`);
      if (options.json === true) {
        out(JSON.stringify(describe(token, now)));
        return;
      }
      out(
        token.revokedAt === now
          ? `revoked ${token.id} "${token.name}"`
          : `${token.id} "${token.name}" was already revoked at ${day(token.revokedAt, "")}`,
      );
    });
}
