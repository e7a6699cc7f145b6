import type { Command } from "commander";

import { envNote, SETTINGS } from "../config.ts";
import { createLogger } from "../logger.ts";
import { openStore } from "../storage/open-store.ts";
import { isWorkerProcess, reportSignalsHandled, superviseWorkers } from "../workers.ts";
import { configFrom, type ConfigOptions, databaseUrlOption } from "./command-config.ts";
import { noteDatabase } from "./database-note.ts";

/**
 * `plantstore-server serve`: migrate, listen, and on SIGTERM/SIGINT stop gracefully within
 * PLANTSTORE_SHUTDOWN_TIMEOUT_MS (exit 0), or exit 1 past it. With PLANTSTORE_WORKERS > 1 this
 * process only supervises the workers (workers.ts).
 */
export function addServeCommand(program: Command): void {
  program
    .command("serve")
    .description("Start the HTTP service (migrates the database first).")
    .option("--port <port>", `port to listen on (${envNote(SETTINGS.port)})`)
    .option("--workers <n>", `HTTP worker processes (${envNote(SETTINGS.workers)})`)
    .option("--host <host>", `address to bind (${envNote(SETTINGS.host)})`)
    .addOption(databaseUrlOption("sqlite:<path>, sqlite::memory: or postgres://…"))
    .action(async (options: ConfigOptions) => {
      const config = configFrom(options);
      const logger = createLogger(config.logLevel);
      // The admin commands say the same on stderr; here it is part of the log.
      const { database, creates, opened } = noteDatabase(config.databaseUrl);
      const logCreated = () => {
        if (creates) logger.info({ database }, opened);
      };
      if (config.workers > 1 && !isWorkerProcess()) {
        if (config.port === 0) throw new Error("PLANTSTORE_WORKERS > 1 needs a fixed PORT, not 0");
        // Migrate once, before any worker opens the database.
        await (await openStore(config.databaseUrl, { postgres: config.postgres })).close();
        logCreated();
        superviseWorkers(config.workers, logger, config.shutdownTimeoutMs);
        return;
      }
      if (config.tokens.length === 0 && config.jwt === undefined) {
        logger.info(
          "no PLANTSTORE_TOKENS and no JWT issuer: only tokens from `plantstore-server tokens create` are accepted",
        );
      }
      // The HTTP stack (Koa, tRPC, the OpenAPI generator, metrics) is imported here, not at the top:
      // the admin commands (migrate, tokens, webhooks) share this bin and need none of it.
      const startup = import("../server.ts").then(({ startServer }) => startServer({ config, logger }));
      let stopping = false;
      const stop = (signal: NodeJS.Signals) => {
        // A second signal (a cluster primary forwarding the terminal's Ctrl-C, an impatient
        // supervisor) must not kill the process mid-drain: the deadline below bounds the stop.
        if (stopping) return;
        stopping = true;
        logger.info({ signal, deadlineMs: config.shutdownTimeoutMs }, "shutting down");
        const deadline = setTimeout(() => {
          logger.error({ deadlineMs: config.shutdownTimeoutMs }, "shutdown deadline passed; exiting");
          process.exit(1);
        }, config.shutdownTimeoutMs);
        startup
          .then((running) => running.close())
          .then(
            () => {
              clearTimeout(deadline);
              logger.info("stopped");
              process.exit(0);
            },
            (error: unknown) => {
              logger.error({ err: error }, "shutdown failed");
              process.exit(1);
            },
          );
      };
      // Listening for signals before start-up ends: a cluster primary that stops while this worker
      // is still opening its database would otherwise kill it by the signal's default action, and
      // report a worker that did not stop cleanly (seen under load). Stopped then, it closes once started.
      process.on("SIGTERM", stop);
      process.on("SIGINT", stop);
      reportSignalsHandled();
      const running = await startup;
      logCreated();
      logger.info({ url: running.url, database }, "plantstore listening");
    });
}
