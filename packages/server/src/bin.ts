#!/usr/bin/env -S node --max-semi-space-size=8
import { Command, CommanderError } from "commander";
import { loadConfig, type Config } from "./config.ts";
import { createLogger } from "./logger.ts";
import { startServer } from "./server.ts";
import { openStore, openWebhookAdmin as openAdmin } from "./storage/open-store.ts";
import { isWorkerProcess, superviseWorkers } from "./workers.ts";
import { checkWebhookSecret, newWebhookSecret, type WebhookAdmin } from "./storage/webhook-admin.ts";
import { checkWebhookUrl, createOutboundPolicy } from "./webhooks/outbound-guard.ts";
import { addTokensCommand } from "./cli/tokens-command.ts";

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
  .option("--database-url <url>", "sqlite:<path>, sqlite::memory: or postgres://… (env DATABASE_URL)")
  .action(async (options: { port?: string; host?: string; databaseUrl?: string; workers?: string }) => {
    const config = configFrom(options);
    const logger = createLogger(config.logLevel);
    if (config.workers > 1 && !isWorkerProcess()) {
      if (config.port === 0) throw new Error("PLANTSTORE_WORKERS > 1 needs a fixed PORT, not 0");
      // Migrate once, before any worker opens the database.
      await (await openStore(config.databaseUrl, { postgres: config.postgres })).close();
      superviseWorkers(config.workers, logger, config.shutdownTimeoutMs);
      return;
    }
    if (config.tokens.length === 0 && config.jwt === undefined) {
      logger.info("no PLANTSTORE_TOKENS and no JWT issuer: only tokens from `plantstore-server tokens create` are accepted");
    }
    const running = await startServer({ config, logger });
    logger.info({ url: running.url }, "plantstore listening");
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
      running.close().then(
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
    process.on("SIGTERM", stop);
    process.on("SIGINT", stop);
  });

program
  .command("migrate")
  .description("Apply pending database migrations and exit.")
  .option("--database-url <url>", "sqlite:<path>, sqlite::memory: or postgres://… (env DATABASE_URL)")
  .action(async (options: { databaseUrl?: string }) => {
    const config = configFrom(options);
    const store = await openStore(config.databaseUrl, { postgres: config.postgres });
    await store.close();
    process.stdout.write("migrations applied\n");
  });

/** Opens the webhook tables of the configured database (migrating it first). */
async function openWebhookAdmin(options: { databaseUrl?: string }): Promise<WebhookAdmin> {
  const config = configFrom(options);
  return openAdmin(config.databaseUrl, { postgres: { ...config.postgres, poolSize: 1 } });
}

const print = (json: boolean, value: unknown, text: string) =>
  process.stdout.write(json ? `${JSON.stringify(value)}\n` : `${text}\n`);

const webhooks = program.command("webhooks").description("Manage subscribers of the new-plant webhook and their deliveries.");
const dbOption = ["--database-url <url>", "sqlite:<path> or postgres://… (env DATABASE_URL)"] as const;

webhooks
  .command("add")
  .description("Subscribe a URL; every new plant is POSTed to it as NewPlant JSON, signed (Standard Webhooks).")
  .argument("<url>", "http(s) URL of the receiver")
  .option("--secret <whsec>", "signing secret (whsec_…); generated when omitted")
  .option(...dbOption)
  .option("--json", "machine-readable output")
  .action(async (url: string, options: { secret?: string; databaseUrl?: string; json?: boolean }) => {
    const config = configFrom(options);
    checkWebhookUrl(url, createOutboundPolicy(config.webhookAllowedHosts));
    const secret = options.secret ?? newWebhookSecret();
    checkWebhookSecret(secret);
    const admin = await openWebhookAdmin(options);
    try {
      const subscriber = await admin.add(url, secret);
      // The secret is shown once, here; the receiver needs it to verify signatures.
      print(Boolean(options.json), { ...subscriber, secret }, `added ${subscriber.id} ${url}\nsecret: ${secret}`);
    } finally {
      await admin.close();
    }
  });

webhooks
  .command("list")
  .description("List subscribers (secrets are not shown).")
  .option(...dbOption)
  .option("--json", "machine-readable output")
  .action(async (options: { databaseUrl?: string; json?: boolean }) => {
    const admin = await openWebhookAdmin(options);
    try {
      const list = await admin.list();
      print(
        Boolean(options.json),
        list,
        list.map((s) => `${s.id}  ${s.active ? "active" : `disabled (${s.disabledReason})`}  ${s.url}`).join("\n") || "no subscribers",
      );
    } finally {
      await admin.close();
    }
  });

webhooks
  .command("remove")
  .description("Remove a subscriber; its pending deliveries are cancelled.")
  .argument("<id>", "subscriber id (whk_…)")
  .option(...dbOption)
  .action(async (id: string, options: { databaseUrl?: string }) => {
    const admin = await openWebhookAdmin(options);
    try {
      if (!(await admin.remove(id))) throw new Error(`no subscriber ${id}`);
      process.stdout.write(`removed ${id}\n`);
    } finally {
      await admin.close();
    }
  });

webhooks
  .command("deliveries")
  .description("Show recent deliveries and their attempts.")
  .option("--failed", "only deliveries still failing: being retried, or given up")
  .option("--attempts", "also list every recorded attempt: when, the receiver's status or the error, how long")
  .option("--limit <n>", "how many", "50")
  .option(...dbOption)
  .option("--json", "machine-readable output")
  .action(async (options: { failed?: boolean; attempts?: boolean; limit: string; databaseUrl?: string; json?: boolean }) => {
    const admin = await openWebhookAdmin(options);
    try {
      const deliveries = await admin.deliveries({ failedOnly: Boolean(options.failed), limit: Number(options.limit) });
      const rows = [];
      for (const d of deliveries) rows.push(options.attempts === true ? { ...d, attemptLog: await admin.attempts(d.id) } : d);
      print(
        Boolean(options.json),
        rows,
        rows
          .map(
            (d) =>
              `${d.id}  ${d.status}  attempts ${d.attempts}  ${d.messageId}  ${d.subscriberId}` +
              (d.lastStatus !== null || d.lastError !== null ? `  last: ${d.lastStatus ?? ""} ${d.lastError ?? ""}` : "") +
              ("attemptLog" in d
                ? d.attemptLog.map((a) => `\n    ${a.attemptedAt}  ${a.statusCode ?? a.error ?? ""}  ${a.durationMs} ms`).join("")
                : ""),
          )
          .join("\n") || "no deliveries",
      );
    } finally {
      await admin.close();
    }
  });

webhooks
  .command("replay")
  .description("Send a delivery again now, with the same webhook-id.")
  .argument("<delivery>", "delivery id (from `webhooks deliveries`)")
  .option(...dbOption)
  .action(async (delivery: string, options: { databaseUrl?: string }) => {
    const admin = await openWebhookAdmin(options);
    try {
      const outcome = /^\d+$/.test(delivery) ? await admin.replay(Number(delivery)) : "no_delivery";
      if (outcome === "no_delivery") throw new Error(`no delivery ${delivery}`);
      if (outcome !== "queued") {
        throw new Error(`delivery ${delivery} cannot be sent: its subscriber was ${outcome === "subscriber_removed" ? "removed" : "disabled"}`);
      }
      process.stdout.write(`delivery ${delivery} queued again\n`);
    } finally {
      await admin.close();
    }
  });

addTokensCommand(program, configFrom);

try {
  await program.parseAsync(process.argv);
} catch (error) {
  if (error instanceof CommanderError) {
    process.exit(error.exitCode === 0 ? 0 : 2);
  }
  process.stderr.write(`plantstore-server: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(1);
}
