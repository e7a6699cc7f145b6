import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { type TestableConfig, testServerConfig } from "./test-config.ts";

/**
 * What the starter calls of `@plantstore/server`, passed in (`import * as plantStoreServer from
 * "@plantstore/server"`): the server's own tests use this package, so it cannot depend on the
 * server package without a cycle, which turbo refuses.
 */
export type ServerModule<Config extends TestableConfig, Running extends StartedServer> = {
  loadConfig(env: NodeJS.ProcessEnv): Config;
  startServer(options: { config: Config }): Promise<Running>;
};

export type StartedServer = { url: string; close(): Promise<void> };

/** A database the caller made; `dispose`, when given, is called once the server has closed. */
export type GivenDatabase = { url: string; dispose?(): Promise<void> };

export type RealServerOptions<Config> = {
  /** Settings a test needs on top of `testServerConfig`'s (a JWT issuer, CORS origins, limits). */
  config?: Partial<Config>;
  /** By default a fresh SQLite file in a new temporary folder, removed on close. */
  database?: GivenDatabase;
};

export type RealServer<Running> = Running &
  AsyncDisposable & {
    /** The server's DATABASE_URL, for a test that also reaches the database another way (a CLI). */
    databaseUrl: string;
  };

/**
 * The real server on an ephemeral port with the test settings and a fresh database; `close()`
 * (or `await using`) stops it, then removes the database. Also removed when the start fails.
 */
export async function startRealServer<Config extends TestableConfig, Running extends StartedServer>(
  server: ServerModule<Config, Running>,
  options: RealServerOptions<Config> = {},
): Promise<RealServer<Running>> {
  const database = options.database ?? scratchSqliteDatabase();
  let running: Running;
  try {
    running = await server.startServer({
      config: testServerConfig(server.loadConfig({}), database.url, options.config),
    });
  } catch (error) {
    await database.dispose?.();
    throw error;
  }
  const close = async () => {
    await running.close();
    await database.dispose?.();
  };
  return { ...running, databaseUrl: database.url, close, [Symbol.asyncDispose]: close };
}

function scratchSqliteDatabase(): Required<GivenDatabase> {
  const dir = mkdtempSync(join(tmpdir(), "plantstore-test-server-"));
  return {
    url: `sqlite:${join(dir, "plants.db")}`,
    dispose: async () => rmSync(dir, { recursive: true, force: true }),
  };
}
