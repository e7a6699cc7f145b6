import { execFile, execFileSync } from "node:child_process";
import { appendFileSync, chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";

import { Client } from "pg";

import { freePort } from "./spawned-server.ts";

const run = promisify(execFile);

/**
 * A PostgreSQL cluster of the test's own (initdb into a scratch folder, its own port), for what
 * must not be done to the shared server other tests use: restarting it. Usable with `await using`.
 */
export type PrivatePostgres = {
  /** `postgres://postgres@127.0.0.1:<port>/<database>`: an empty database for the server. */
  url: string;
  /** The database's name, as `pg_stat_activity.datname` shows it. */
  database: string;
  /** `pg_ctl restart -m fast`: every session is ended (57P01), and the server is back when it resolves. */
  restart(): Promise<void>;
  /** `pg_terminate_backend` on every other session of the database; how many there were. */
  terminateBackends(): Promise<number>;
  /** Stops the cluster at once and deletes its folder. */
  dispose(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
};

/**
 * Where `initdb` and `pg_ctl` are: `pg_config --bindir`, else the newest
 * `/usr/lib/postgresql/<major>/bin` (Debian keeps them off PATH). Missing binaries fail the test
 * that asked, never skip it.
 */
function binDir(): string {
  const candidates: string[] = [];
  try {
    candidates.push(execFileSync("pg_config", ["--bindir"], { encoding: "utf8" }).trim());
  } catch {
    // No pg_config on PATH: the Debian layout below may still hold the server.
  }
  const debian = "/usr/lib/postgresql";
  if (existsSync(debian))
    for (const major of readdirSync(debian).sort((a, b) => Number(b) - Number(a)))
      candidates.push(join(debian, major, "bin"));
  const found = candidates.find((dir) => existsSync(join(dir, "initdb")) && existsSync(join(dir, "pg_ctl")));
  if (found === undefined)
    throw new Error(
      `a private PostgreSQL cluster needs initdb and pg_ctl, found in none of ${JSON.stringify(candidates)}: ` +
        "install the PostgreSQL server (Debian: the postgresql package)",
    );
  return found;
}

/** initdb refuses to run as root: as root, the cluster belongs to the `postgres` OS user. */
function owner(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  try {
    const id = (flag: string) => Number(execFileSync("id", [flag, "postgres"], { encoding: "utf8" }).trim());
    return { uid: id("-u"), gid: id("-g") };
  } catch {
    throw new Error(
      "running as root, a private PostgreSQL cluster needs a `postgres` OS user to own it (initdb refuses root)",
    );
  }
}

export async function startPrivatePostgres(database = "plantstore"): Promise<PrivatePostgres> {
  const bin = binDir();
  const user = owner();
  const folder = mkdtempSync(join(tmpdir(), "plantstore-pg-"));
  const data = join(folder, "data");
  const log = join(folder, "server.log");
  if (user !== undefined) chownSync(folder, user.uid, user.gid);
  const pg = async (tool: string, args: string[]) => {
    try {
      await run(join(bin, tool), args, { ...user, cwd: folder, timeout: 60_000 });
    } catch (error) {
      const serverLog = existsSync(log) ? readFileSync(log, "utf8").slice(-2_000) : "";
      throw new Error(`${tool} ${args.join(" ")} failed: ${String(error)}\n${serverLog}`, { cause: error });
    }
  };
  // -l: pg_ctl hands the server a log file, so no pipe of ours stays open after it returns.
  const pgCtl = (...args: string[]) => pg("pg_ctl", ["-D", data, "-l", log, "-w", "-t", "30", ...args]);

  let started = false;
  const dispose = async () => {
    if (started) await pgCtl("stop", "-m", "immediate").catch(() => undefined);
    started = false;
    rmSync(folder, { recursive: true, force: true });
  };
  try {
    await pg("initdb", ["-D", data, "-U", "postgres", "-A", "trust", "-E", "UTF8", "--no-locale", "--no-sync"]);
    const port = await freePort();
    appendFileSync(
      join(data, "postgresql.conf"),
      [
        `port = ${port}`,
        "listen_addresses = '127.0.0.1'",
        `unix_socket_directories = '${folder}'`,
        // What this cluster is for is restarts and ended sessions, not power cuts.
        "fsync = off",
        "shared_buffers = 16MB",
        "",
      ].join("\n"),
    );
    await pgCtl("start");
    started = true;
    const admin = (work: (client: Client) => Promise<unknown>) => withClient(port, "postgres", work);
    await admin((client) => client.query(`CREATE DATABASE ${database}`));
    return {
      url: `postgres://postgres@127.0.0.1:${port}/${database}`,
      database,
      restart: () => pgCtl("restart", "-m", "fast"),
      terminateBackends: async () => {
        let ended = 0;
        await admin(async (client) => {
          const { rows } = await client.query<{ ended: string }>(
            `SELECT count(*) AS ended FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity
             WHERE pid <> pg_backend_pid() AND datname = $1) AS t`,
            [database],
          );
          ended = Number(rows[0]!.ended);
        });
        return ended;
      },
      dispose,
      [Symbol.asyncDispose]: dispose,
    };
  } catch (error) {
    await dispose();
    throw error;
  }
}

async function withClient(port: number, database: string, work: (client: Client) => Promise<unknown>): Promise<void> {
  const client = new Client({ host: "127.0.0.1", port, user: "postgres", database, connectionTimeoutMillis: 5_000 });
  client.on("error", () => {
    // Reported to the statement under way; this connection is ours alone and closed below.
  });
  await client.connect();
  try {
    await work(client);
  } finally {
    await client.end().catch(() => undefined);
  }
}
