import type { Command } from "commander";

import { openWebhookAdmin } from "../storage/open-store.ts";
import {
  checkWebhookSecret,
  newWebhookSecret,
  parseWebhookEvents,
  type Subscriber,
  type WebhookAdmin,
} from "../storage/webhook-admin.ts";
import { checkWebhookUrl, createOutboundPolicy } from "../webhooks/outbound-guard.ts";
import { closingAfter, configFrom, databaseUrlOption } from "./command-config.ts";
import { openNoted } from "./database-note.ts";

type DbOptions = { databaseUrl?: string };

/** Runs work on the webhook tables of the configured database (migrating it first). */
async function withAdmin<T>(options: DbOptions, work: (admin: WebhookAdmin) => Promise<T>): Promise<T> {
  const config = configFrom(options);
  return closingAfter(
    await openNoted(config.databaseUrl, () =>
      openWebhookAdmin(config.databaseUrl, { postgres: { ...config.postgres, poolSize: 1 } }),
    ),
    work,
  );
}

/** What a subscriber without event types receives, as `add`, `list` and `deliveries` name it. */
const BARE_PAYLOAD = "new plants, bare payload";
/** What a subscriber receives, as `webhooks add` and `list` say it. */
const eventsText = (s: Subscriber) => (s.events === null ? BARE_PAYLOAD : s.events.join(","));

const print = (json: boolean, value: unknown, text: string) =>
  process.stdout.write(json ? `${JSON.stringify(value)}\n` : `${text}\n`);

/**
 * `plantstore-server webhooks add|list|remove|deliveries|replay`: webhook subscribers, the events
 * each receives, and their deliveries, in the configured database, beside running servers (they pick a
 * change up with their next write).
 */
export function addWebhooksCommand(program: Command): void {
  const webhooks = program
    .command("webhooks")
    .description("Manage webhook subscribers (plant.created, plant.updated, plant.deleted) and their deliveries.");
  const dbOption = () => databaseUrlOption("sqlite:<path> or postgres://…");

  webhooks
    .command("add")
    .description(
      "Subscribe a URL to events, signed (Standard Webhooks). With --events, each chosen event is POSTed as " +
        "{type, timestamp, data}; without, every new plant is POSTed as bare NewPlant JSON and nothing else.",
    )
    .argument("<url>", "http(s) URL of the receiver")
    .option("--events <types>", "comma-separated: plant.created, plant.updated, plant.deleted")
    .option("--secret <whsec>", "signing secret (whsec_…); generated when omitted")
    .addOption(dbOption())
    .option("--json", "machine-readable output")
    .action(async (url: string, options: DbOptions & { events?: string; secret?: string; json?: boolean }) => {
      const config = configFrom(options);
      checkWebhookUrl(url, createOutboundPolicy(config.webhookAllowedHosts));
      const events = options.events === undefined ? undefined : parseWebhookEvents(options.events);
      const secret = options.secret ?? newWebhookSecret();
      checkWebhookSecret(secret);
      const subscriber = await withAdmin(options, (admin) => admin.add(url, secret, events));
      // The secret is shown once, here; the receiver needs it to verify signatures.
      print(
        Boolean(options.json),
        { ...subscriber, secret },
        `added ${subscriber.id} ${url} (${eventsText(subscriber)})\nsecret: ${secret}`,
      );
    });

  webhooks
    .command("list")
    .description("List subscribers (secrets are not shown).")
    .addOption(dbOption())
    .option("--json", "machine-readable output")
    .action(async (options: DbOptions & { json?: boolean }) => {
      const list = await withAdmin(options, (admin) => admin.list());
      print(
        Boolean(options.json),
        list,
        list
          .map((s) => `${s.id}  ${s.active ? "active" : `disabled (${s.disabledReason})`}  ${s.url}  ${eventsText(s)}`)
          .join("\n") || "no subscribers",
      );
    });

  webhooks
    .command("remove")
    .description("Remove a subscriber; its pending deliveries are cancelled.")
    .argument("<id>", "subscriber id (whk_…)")
    .addOption(dbOption())
    .action(async (id: string, options: DbOptions) => {
      if (!(await withAdmin(options, (admin) => admin.remove(id)))) throw new Error(`no subscriber ${id}`);
      process.stdout.write(`removed ${id}\n`);
    });

  webhooks
    .command("deliveries")
    .description("Show recent deliveries and their attempts.")
    .option("--failed", "only deliveries still failing: being retried, or given up")
    .option("--attempts", "also list every recorded attempt: when, the receiver's status or the error, how long")
    .option("--limit <n>", "how many", "50")
    .addOption(dbOption())
    .option("--json", "machine-readable output")
    .action(async (options: DbOptions & { failed?: boolean; attempts?: boolean; limit: string; json?: boolean }) => {
      const rows = await withAdmin(options, async (admin) => {
        const deliveries = await admin.deliveries({
          failedOnly: Boolean(options.failed),
          limit: Number(options.limit),
        });
        const rows = [];
        for (const d of deliveries)
          rows.push(options.attempts === true ? { ...d, attemptLog: await admin.attempts(d.id) } : d);
        return rows;
      });
      print(
        Boolean(options.json),
        rows,
        rows
          .map(
            (d) =>
              `${d.id}  ${d.status}  attempts ${d.attempts}  ${d.messageId}  ${d.subscriberId}  ${d.event ?? BARE_PAYLOAD}` +
              (d.lastStatus !== null || d.lastError !== null
                ? `  last: ${d.lastStatus ?? ""} ${d.lastError ?? ""}`
                : "") +
              ("attemptLog" in d
                ? d.attemptLog
                    .map((a) => `\n    ${a.attemptedAt}  ${a.statusCode ?? a.error ?? ""}  ${a.durationMs} ms`)
                    .join("")
                : ""),
          )
          .join("\n") || "no deliveries",
      );
    });

  webhooks
    .command("replay")
    .description("Send a delivery again now, with the same webhook-id.")
    .argument("<delivery>", "delivery id (from `webhooks deliveries`)")
    .addOption(dbOption())
    .action(async (delivery: string, options: DbOptions) => {
      const outcome = await withAdmin(options, async (admin) =>
        /^\d+$/.test(delivery) ? admin.replay(Number(delivery)) : "no_delivery",
      );
      if (outcome === "no_delivery") throw new Error(`no delivery ${delivery}`);
      if (outcome !== "queued") {
        throw new Error(
          `delivery ${delivery} cannot be sent: its subscriber was ${outcome === "subscriber_removed" ? "removed" : "disabled"}`,
        );
      }
      process.stdout.write(`delivery ${delivery} queued again\n`);
    });
}
