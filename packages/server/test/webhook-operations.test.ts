import { afterEach, describe, expect, it } from "vitest";
import { WebhookAdmin } from "../src/storage/sqlite/webhook-admin.ts";
import { startTestServer, type TestServer } from "./harness.ts";
import { startReceiver, until } from "./webhook-receiver.ts";

const SECRET = `whsec_${Buffer.alloc(32, 9).toString("base64")}`;

const cleanups: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function storeWith(url: string, overrides: Parameters<typeof startTestServer>[0] = {}): Promise<TestServer> {
  const server = await startTestServer({ webhookAllowedHosts: ["127.0.0.1"], webhookRetryBaseMs: 40, ...overrides });
  cleanups.push(() => server.close());
  const admin = new WebhookAdmin(server.databasePath);
  admin.add(url, SECRET);
  admin.close();
  return server;
}

function admin(server: TestServer): WebhookAdmin {
  const opened = new WebhookAdmin(server.databasePath);
  cleanups.push(() => opened.close());
  return opened;
}

describe("webhook targets given as a private IP literal", () => {
  it("are never contacted without the allow-list, though no DNS lookup is made for them", async () => {
    const receiver = await startReceiver(() => ({ status: 200 }));
    cleanups.push(receiver.close);
    // Stored behind the CLI's back (or allowed when added, and the allow-list changed since).
    const server = await storeWith(receiver.url, { webhookAllowedHosts: [] });
    await server.createRaw('{"id":1,"name":"a"}');
    const deliveries = admin(server);
    await until(() => deliveries.deliveries({ failedOnly: true, limit: 10 }).length === 1, 10_000, "a failed attempt");
    expect(deliveries.deliveries({ failedOnly: true, limit: 10 })[0]!.lastError).toMatch(/non-public/);
    expect(receiver.received).toHaveLength(0);
  });
});
