import { once } from "node:events";

import { Redis } from "ioredis";
import type { Logger } from "pino";
import { RateLimiterRes } from "rate-limiter-flexible";

import type { Metrics } from "../metrics.ts";
import { CircuitBreaker } from "../resilience/circuit-breaker.ts";

/** How long start-up waits for a slow Redis before serving with per-instance counts. */
const CONNECT_WAIT_MS = 2_000;
const WARN_EVERY_MS = 10_000;

/** Consecutive failed Redis calls (each refused, or unanswered for COMMAND_TIMEOUT_MS) that open the circuit. */
const REDIS_FAILURES_TO_OPEN = 3;
/** While the circuit is open, Redis is sent a PING this often; the first PONG closes it. */
const REDIS_PROBE_INTERVAL_MS = 1_000;
const COMMAND_TIMEOUT_MS = 500;

/**
 * The Redis client for shared rate-limit counters. Commands fail fast rather than queue while
 * disconnected (`enableOfflineQueue: false`) or hang (`commandTimeout`). A Redis that goes away
 * costs a request at most half a second once; one that hangs (`kill -STOP`, a silent network)
 * keeps the connection "up", so it is the circuit breaker (redisCircuitBreaker) that stops asking
 * it. The URL (it may hold a password) is never logged.
 */
export async function connectRedis(url: string, logger: Logger): Promise<Redis> {
  const client = new Redis(url, {
    enableOfflineQueue: false,
    commandTimeout: COMMAND_TIMEOUT_MS,
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

/**
 * The breaker every shared rate-limit call goes through. After REDIS_FAILURES_TO_OPEN timeouts or
 * refusals in a row it opens: requests are counted in this instance's memory at once, with no
 * Redis round trip and no wait, until a PING (every REDIS_PROBE_INTERVAL_MS) is answered. A 429
 * from the limiter is Redis answering, not failing. The state is the
 * `plantstore_dependency_circuit_open{dependency="redis"}` gauge; each opening and closing is one
 * log line.
 */
export function redisCircuitBreaker(client: Redis, logger: Logger, metrics: Metrics): CircuitBreaker {
  const breaker = new CircuitBreaker({
    dependency: "Redis",
    failureThreshold: REDIS_FAILURES_TO_OPEN,
    probe: () => client.ping(),
    probeIntervalMs: REDIS_PROBE_INTERVAL_MS,
    probeTimeoutMs: COMMAND_TIMEOUT_MS,
    isFailure: (error) => !(error instanceof RateLimiterRes),
  });
  const labels = { dependency: "redis" } as const;
  metrics.dependencyCircuitOpen.set(labels, 0);
  breaker.onStateChange((state, cause) => {
    metrics.dependencyCircuitOpen.set(labels, state === "open" ? 1 : 0);
    if (state === "closed") {
      logger.info("Redis answers again: circuit closed, rate limits are shared again");
      return;
    }
    metrics.dependencyCircuitOpenings.inc(labels);
    logger.warn(
      { err: cause instanceof Error ? { message: cause.message } : String(cause) },
      `Redis failed ${REDIS_FAILURES_TO_OPEN} calls in a row: circuit open, rate limits count per instance ` +
        `without asking it until it answers a PING (every ${REDIS_PROBE_INTERVAL_MS} ms)`,
    );
  });
  return breaker;
}
