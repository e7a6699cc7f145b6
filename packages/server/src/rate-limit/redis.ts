import { once } from "node:events";
import { Redis } from "ioredis";
import type { Logger } from "pino";

/** How long start-up waits for a slow Redis before serving with per-instance counts. */
const CONNECT_WAIT_MS = 2_000;
const WARN_EVERY_MS = 10_000;

/**
 * The Redis client for shared rate-limit counters. Commands fail fast rather than queue while
 * disconnected (`enableOfflineQueue: false`) or hang (`commandTimeout`), so a Redis outage costs a
 * request at most half a second once, then the limiter counts in memory until ioredis has
 * reconnected on its own. The URL (it may hold a password) is never logged.
 */
export async function connectRedis(url: string, logger: Logger): Promise<Redis> {
  const client = new Redis(url, {
    enableOfflineQueue: false,
    commandTimeout: 500,
    maxRetriesPerRequest: 1,
    connectTimeout: CONNECT_WAIT_MS,
    // Reconnect forever, backing off to one attempt per 2 s.
    retryStrategy: (attempt) => Math.min(attempt * 100, 2_000),
  });
  let lastWarning = 0;
  client.on("error", (error: Error) => {
    const now = Date.now();
    if (now - lastWarning < WARN_EVERY_MS) return;
    lastWarning = now;
    logger.warn(
      { err: { message: error.message } },
      "Redis connection failed; rate limits count per instance meanwhile",
    );
  });
  client.on("ready", () => logger.info("Redis connected; rate limits are shared"));
  // Ready, or the first failed attempt (a refused connection need not hold up start-up), or time out.
  const settled = new AbortController();
  const ready = await Promise.race([
    // events.once rejects when "error" comes first: that is the refused-connection case.
    once(client, "ready", { signal: settled.signal }).then(
      () => true,
      () => false,
    ),
    new Promise<boolean>((resolve) => setTimeout(resolve, CONNECT_WAIT_MS, false).unref()),
  ]).finally(() => settled.abort());
  if (!ready) logger.warn("Redis not reachable at start-up; serving with per-instance rate limits until it is");
  return client;
}

export async function disconnectRedis(client: Redis): Promise<void> {
  if (client.status === "ready") {
    await client.quit().catch(() => client.disconnect());
  } else {
    client.disconnect();
  }
}
