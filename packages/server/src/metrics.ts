import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from "prom-client";

/**
 * Prometheus metrics for one process (with PLANTSTORE_WORKERS > 1, each worker keeps its own).
 * Route labels are templates (`/plants`), never raw paths, so scanners cannot blow up cardinality.
 */
export type Metrics = ReturnType<typeof createMetrics>;

export function createMetrics(
  sources: { webhookBacklog?: () => Promise<number>; openConnections?: () => number } = {},
) {
  const registry = new Registry();
  collectDefaultMetrics({ register: registry, prefix: "plantstore_" });
  return {
    registry,
    requests: new Counter({
      name: "plantstore_http_requests_total",
      help: "HTTP requests answered, by route template, method and status.",
      labelNames: ["route", "method", "status"] as const,
      registers: [registry],
    }),
    requestDuration: new Histogram({
      name: "plantstore_http_request_duration_seconds",
      help: "Time from request start to the last byte of the answer, by route template and method.",
      labelNames: ["route", "method"] as const,
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
      registers: [registry],
    }),
    errors: new Counter({
      name: "plantstore_errors_total",
      help: "Error answers, by catalogue code name (every one, though repeated failures are logged once per interval).",
      labelNames: ["code"] as const,
      registers: [registry],
    }),
    batchSize: new Histogram({
      name: "plantstore_store_batch_size",
      help: "Creations committed together in one transaction (group commit).",
      buckets: [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
      registers: [registry],
    }),
    commitDuration: new Histogram({
      name: "plantstore_store_commit_duration_seconds",
      help: "Time to commit one batch, including its sync to disk.",
      buckets: [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1],
      registers: [registry],
    }),
    webhookAttempts: new Counter({
      name: "plantstore_webhook_attempts_total",
      help: "Webhook delivery attempts, by outcome (delivered, failed_attempt, gone).",
      labelNames: ["outcome"] as const,
      registers: [registry],
    }),
    webhookDeliveries: new Counter({
      name: "plantstore_webhook_deliveries_total",
      help: "Webhook deliveries that reached a final outcome: delivered, failed (gave up after every retry) or gone (410).",
      labelNames: ["outcome"] as const,
      registers: [registry],
    }),
    webhookBacklog: new Gauge({
      name: "plantstore_webhook_outbox_depth",
      help: "Webhook deliveries waiting to be delivered (including those waiting for a retry).",
      registers: [registry],
      // Read at scrape time; a database that cannot answer leaves the last value rather than failing the scrape.
      async collect() {
        if (sources.webhookBacklog === undefined) return;
        try {
          this.set(await sources.webhookBacklog());
        } catch {
          // keep the previous value
        }
      },
    }),
    openConnections: new Gauge({
      name: "plantstore_http_open_connections",
      help: "Connections the API port holds open (see PLANTSTORE_MAX_CONNECTIONS).",
      registers: [registry],
      collect() {
        if (sources.openConnections !== undefined) this.set(sources.openConnections());
      },
    }),
    connectionsRefused: new Counter({
      name: "plantstore_http_connections_refused_total",
      help: "Connections answered 503 and closed because PLANTSTORE_MAX_CONNECTIONS were open.",
      registers: [registry],
    }),
    eventStreams: new Gauge({
      name: "plantstore_event_streams",
      help: "Streams of GET /plants/events open on this instance.",
      registers: [registry],
    }),
    eventStreamsRefused: new Counter({
      name: "plantstore_event_streams_refused_total",
      help: "Streams of GET /plants/events refused before they started, by reason: token or address (at its PLANTSTORE_EVENTS_MAX_PER_* cap, 429), capacity (at PLANTSTORE_EVENTS_CONNECTION_SHARE, 503).",
      labelNames: ["reason"] as const,
      registers: [registry],
    }),
    eventStreamsClosed: new Counter({
      name: "plantstore_event_streams_closed_total",
      help: "Streams of GET /plants/events that ended, by reason: client, slow_consumer, token (revoked or expired), shutdown, read_failed.",
      labelNames: ["reason"] as const,
      registers: [registry],
    }),
    rateLimited: new Counter({
      name: "plantstore_rate_limited_total",
      help: "Requests refused with 429, by reason.",
      labelNames: ["reason"] as const,
      registers: [registry],
    }),
    tokenStoreQueries: new Counter({
      name: "plantstore_token_store_queries_total",
      help: "Queries of the issued-token store for authentication, by query: change_version (the 250 ms poll and the change checks requests share), active_tokens (every active token, read again after a change), find_token (one token, only when more are active than a server holds in memory).",
      labelNames: ["query"] as const,
      registers: [registry],
    }),
    rateLimitFallbacks: new Counter({
      name: "plantstore_rate_limit_fallbacks_total",
      help: "Rate-limit decisions counted in this instance's memory because Redis (REDIS_URL) failed or was not connected.",
      registers: [registry],
    }),
    dependencyCircuitOpen: new Gauge({
      name: "plantstore_dependency_circuit_open",
      help: "1 while the circuit breaker in front of a dependency is open (calls to it are skipped until a background probe answers), else 0.",
      labelNames: ["dependency"] as const,
      registers: [registry],
    }),
    dependencyCircuitOpenings: new Counter({
      name: "plantstore_dependency_circuit_openings_total",
      help: "Times the circuit breaker in front of a dependency opened (so short outages between scrapes are seen too).",
      labelNames: ["dependency"] as const,
      registers: [registry],
    }),
  };
}
