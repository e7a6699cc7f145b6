#!/usr/bin/env -S node --max-semi-space-size=8
import { Command, CommanderError } from "commander";
import { loadConfig, type Config } from "./config.ts";
import { createLogger } from "./logger.ts";
import { startServer } from "./server.ts";
import { openStore } from "./storage/open-store.ts";
import { isWorkerProcess, superviseWorkers } from "./workers.ts";

function configFrom(options: { port?: string; host?: string; databaseUrl?: string; workers?: string }): Config {
  const config = loadConfig();
  return {
    ...config,
    ...(options.port !== undefined ? { port: Number(options.port) } : {}),
    ...(options.host !== undefined ? { host: options.host } : {}),
    ...(options.databaseUrl !== undefined ? { databaseUrl: options.databaseUrl } : {}),
    ...(options.workers !== undefined ? { workers: Number(options.workers) } : {}),
  };
}

const program = new Command()
  .name("plantstore-server")
  .description("Run and administer a Plant Store service.")
  .showHelpAfterError()
  .exitOverride();

program
  .command("serve")
  .description("Start the HTTP service (migrates the database first).")
  .option("--port <port>", "port to listen on (env PORT, default 3000)")
  .option("--workers <n>", "HTTP worker processes (env PLANTSTORE_WORKERS, default 1)")
  .option("--host <host>", "address to bind (env HOST, default 127.0.0.1)")
  .option("--database-url <url>", "sqlite:<path> or sqlite::memory: (env DATABASE_URL)")
  .action(async (options: { port?: string; host?: string; databaseUrl?: string; workers?: string }) => {
    const config = configFrom(options);
    const logger = createLogger(config.logLevel);
    if (config.workers > 1 && !isWorkerProcess()) {
      if (config.port === 0) throw new Error("PLANTSTORE_WORKERS > 1 needs a fixed PORT, not 0");
      // Migrate once, before any worker opens the database.
      await openStore(config.databaseUrl).close();
      superviseWorkers(config.workers, logger);
      return;
    }
    if (config.tokens.length === 0) {
      logger.warn("PLANTSTORE_TOKENS is empty: every protected request will be refused with 401");
    }
    const running = await startServer({ config, logger });
    logger.info({ url: running.url }, "plantstore listening");
    const stop = (signal: string) => {
      logger.info({ signal }, "shutting down");
      running.close().then(
        () => process.exit(0),
        (error: unknown) => {
          logger.error({ err: error }, "shutdown failed");
          process.exit(1);
        },
      );
    };
    process.once("SIGTERM", () => stop("SIGTERM"));
    process.once("SIGINT", () => stop("SIGINT"));
  });

program
  .command("migrate")
  .description("Apply pending database migrations and exit.")
  .option("--database-url <url>", "sqlite:<path> or sqlite::memory: (env DATABASE_URL)")
  .action(async (options: { databaseUrl?: string }) => {
    const store = openStore(configFrom(options).databaseUrl);
    await store.close();
    process.stdout.write("migrations applied\n");
  });

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    process.exit(error.exitCode === 0 ? 0 : 2);
  }
  process.stderr.write(`plantstore-server: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
