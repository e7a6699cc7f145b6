import { once } from "node:events";
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

import type { Logger } from "pino";

import { chainAuthenticators } from "./auth/authenticators.ts";
import { OpaqueTokenAuthenticator } from "./auth/opaque-tokens.ts";
import type { Authenticator } from "./auth/principal.ts";
import { createStaticTokenAuthenticator } from "./auth/static-tokens.ts";
import { ChangeFanout } from "./changes/change-fanout.ts";
import type { ChangeLog } from "./changes/change-log.ts";
import { startChangePruner } from "./changes/change-pruner.ts";
import type { Clock } from "./clock.ts";
import type { Config } from "./config.ts";
import { createApp } from "./http/app.ts";
import { clientAddressOf } from "./http/client-address.ts";
import { answerClientError, answerConnect } from "./http/client-error.ts";
import { guardConnections } from "./http/connections.ts";
import { createMetricsApp } from "./http/metrics-app.ts";
import { EventStreams } from "./http/plant-events.ts";
import { checkFraming } from "./http/request-framing.ts";
import { type KernelSendBuffer, loadKernelSendBuffer } from "./http/send-buffer.ts";
import { changeFrames, positionFrame } from "./http/sse-frames.ts";
import { LogThrottle } from "./log-throttle.ts";
import { createLogger } from "./logger.ts";
import { createMetrics, type Metrics } from "./metrics.ts";
import { RateLimits } from "./rate-limit/rate-limits.ts";
import { appRouter } from "./router/root.ts";
import { openStore, openTokenStore } from "./storage/open-store.ts";
import type { PlantStore } from "./storage/plant-store.ts";
import { isPostgresUrl } from "./storage/postgres/settings.ts";
import { WriteHealth } from "./storage/write-health.ts";
import { TeardownStack } from "./teardown-stack.ts";
import { startDispatcher } from "./webhooks/dispatcher.ts";
import { createOutboundPolicy } from "./webhooks/outbound-guard.ts";

export type RunningServer = {
  /** e.g. `http://127.0.0.1:43121` */
  url: string;
  /** Where /metrics is served when PLANTSTORE_METRICS_PORT is set. */
  metricsUrl: string | undefined;
  port: number;
  server: Server;
  store: PlantStore;
  /**
   * Graceful stop: stops accepting, lets requests under way finish (keep-alive connections are
   * told `Connection: close`), stops webhook delivery at a safe point, commits what is queued and
   * closes the database. Rejects when `deadlineMs` (default PLANTSTORE_SHUTDOWN_TIMEOUT_MS) passed
   * before every request was answered; those connections were cut.
   */
  close(options?: { deadlineMs?: number }): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
};

export type StartOptions = {
  config: Config;
  logger?: Logger;
  /** Overrides the authenticator built from the configuration (static, issued and JWT tokens). */
  authenticator?: Authenticator;
  /**
   * Time for what waits, retries or expires: webhook delivery (attempts, retries, leases,
   * deadlines, polling), rate-limit windows counted in memory and address blocks, token expiry and
   * the token and key caches, readiness' write stalls and probes; by default the wall clock (a
   * monotonic one for readiness). Tests move one on instead of sleeping.
   */
  clock?: Clock;
  /**
   * How long past the request timeout a connection may go without a byte moving, or without its
   * client taking any of its answers' bytes, before it is closed (default 5 s). Tests that watch
   * these cuts shorten it rather than wait 5 s for each.
   */
  stallMarginMs?: number;
};

// On shutdown, idle keep-alive connections get this long to send one last request (answered with
// `Connection: close`) before they are closed, so a request already on the wire is not reset.
const IDLE_GRACE_MS = 1_000;
// A connection on which no byte moves either way for this long past the request timeout is closed,
// and so is one whose client took none of its answers' bytes for as long (it stopped reading),
// whatever it sent; the request timeout itself answers 408 first.
const STALL_MARGIN_MS = 5_000;

// 32 base64 characters carry 192 random bits: beyond any guessing rate a server can answer.
const STATIC_TOKEN_MIN_LENGTH = 32;

/**
 * Opens the store, builds the app and listens; `port: 0` picks an ephemeral port. Each resource
 * registers its close as it is opened, so a start that fails at any step closes what it had opened,
 * in reverse order, through the same teardown a normal stop uses.
 */
export async function startServer(options: StartOptions): Promise<RunningServer> {
  const { config } = options;
  const logger = options.logger ?? createLogger(config.logLevel);
  const shortStaticTokens = config.tokens.filter((token) => token.length < STATIC_TOKEN_MIN_LENGTH).length;
  if (shortStaticTokens > 0) {
    // A right guess is served even from an address over its failed-authentication limit (a valid
    // token is never refused for someone else's guesses), so that limit does not slow guessing:
    // a static token's own length is its only defence. Counted, never shown.
    logger.warn(
      { component: "auth", count: shortStaticTokens },
      `PLANTSTORE_TOKENS holds tokens shorter than ${STATIC_TOKEN_MIN_LENGTH} characters: use long random ones (e.g. openssl rand -base64 32)`,
    );
  }
  const teardown = new TeardownStack();
  try {
    return await openAndListen(options, logger, teardown);
  } catch (error) {
    // The start-up failure is what the caller must see; a close that fails as well is only logged.
    await teardown.disposeAsync().catch((closeError: unknown) => {
      logger.error({ err: closeError }, "closing what start-up had opened failed");
    });
    throw error;
  }
}

async function openAndListen(options: StartOptions, logger: Logger, teardown: TeardownStack): Promise<RunningServer> {
  const { config } = options;
  let backlog = async () => 0;
  let openConnections = () => 0;
  const metrics = createMetrics({ webhookBacklog: () => backlog(), openConnections: () => openConnections() });
  // Present from the start on PostgreSQL, so a dashboard sees 0 rather than no series.
  if (isPostgresUrl(config.databaseUrl)) {
    metrics.dependencyCircuitOpen.set({ dependency: "postgres" }, 0);
    metrics.dependencyCircuitOpenings.inc({ dependency: "postgres" }, 0);
  }
  const writeHealth = new WriteHealth({ clock: options.clock });
  // Shared by the request log and background work, so an outage writes one line per kind of failure per interval.
  const logThrottle = new LogThrottle();
  // Last of all: counts of repeated failures not yet written would otherwise be lost with the process.
  teardown.defer(() => logThrottle.flush());
  const store = await openStore(config.databaseUrl, {
    durability: config.durability,
    busyTimeoutMs: config.sqliteBusyTimeoutMs,
    writeHealth,
    onCommit: (size, ms) => {
      metrics.batchSize.observe(size);
      metrics.commitDuration.observe(ms / 1000);
    },
    postgres: {
      ...config.postgres,
      // The pool replaces the connection by itself; the line tells an operator why requests failed.
      onIdleError: (error) => logger.warn({ component: "storage", err: error }, "database connection lost"),
    },
    postgresBreaker: {
      ...config.postgresBreaker,
      onStateChange: (state, { stalled }) => {
        metrics.dependencyCircuitOpen.set({ dependency: "postgres" }, state === "open" ? 1 : 0);
        if (state === "open") {
          metrics.dependencyCircuitOpenings.inc({ dependency: "postgres" });
          const why = stalled
            ? "a statement stalled and a probe got no answer"
            : `${config.postgresBreaker.failureThreshold} timeouts or refusals in a row`;
          logger.warn(
            { component: "storage", stalled },
            `PostgreSQL circuit open: it stopped answering (${why}); requests get 503 at once while a probe waits for it`,
          );
        } else logger.info({ component: "storage" }, "PostgreSQL circuit closed: the database answers again");
      },
    },
  });
  // Commits what is queued (requests under way were waiting for it), then closes the database.
  teardown.defer(() => store.close());
  backlog = () => store.webhookBacklog();
  const tokenStore = await openTokenStore(config.databaseUrl, "server", { postgres: config.postgres });
  teardown.defer(() => tokenStore.close());
  // Built before the issued tokens start, so that nothing can fail between their start and the
  // registration of the chain's close.
  const staticTokens = createStaticTokenAuthenticator(config.tokens);
  // JWT (jose) and Redis (ioredis) are imported only when configured, as PostgreSQL is (open-store.ts).
  const jwtTokens =
    config.jwt === undefined
      ? []
      : [(await import("./auth/jwt-tokens.ts")).createJwtAuthenticator(config.jwt, options.clock)];
  const opaqueTokens = await OpaqueTokenAuthenticator.start({
    store: tokenStore,
    // Background work, not a request: its lines say where they come from instead of a reqId.
    logger: logger.child({ component: "tokens" }),
    lastUsedFlushMs: config.tokenLastUsedFlushMs,
    onQuery: (query) => metrics.tokenStoreQueries.inc({ query }),
    clock: options.clock,
  });
  const configured = chainAuthenticators([staticTokens, opaqueTokens, ...jwtTokens]);
  // Last-used times still in memory are written before the token store closes.
  teardown.defer(() => configured.close());
  const authenticator = options.authenticator ?? configured;
  const rateLimitLogger = logger.child({ component: "rate-limit" });
  const connectSharedCounting = async (url: string, prefix: string) => {
    const { connectRedis, disconnectRedis, redisCircuitBreaker } = await import("./rate-limit/redis.ts");
    const redis = await connectRedis(url, rateLimitLogger);
    teardown.defer(() => disconnectRedis(redis));
    const breaker = redisCircuitBreaker(redis, rateLimitLogger, metrics);
    teardown.defer(() => breaker.stop());
    return { client: redis, prefix, breaker };
  };
  const sharedCounting =
    config.redisUrl === undefined ? undefined : await connectSharedCounting(config.redisUrl, config.redisPrefix);
  const rateLimits = new RateLimits({
    token: config.rateLimits.token,
    authFailures: config.rateLimits.authFailures,
    redis: sharedCounting,
    logger: rateLimitLogger,
    metrics,
    clock: options.clock,
  });
  const kernelSendBuffer = await loadKernelSendBuffer();
  if ("unavailable" in kernelSendBuffer) {
    logger.warn(
      { component: "events", reason: kernelSendBuffer.unavailable },
      "the kernel's send buffer of GET /plants/events streams cannot be capped here: a stream whose client stops reading may hold up to the kernel's own limit (net.ipv4.tcp_wmem) beyond PLANTSTORE_EVENTS_BUFFER_LIMIT",
    );
  }
  const eventStreams = startChangeFeed(
    store,
    config,
    {
      authenticator,
      logger,
      logThrottle,
      metrics,
      kernelSendBuffer: "unavailable" in kernelSendBuffer ? undefined : kernelSendBuffer,
    },
    options.clock,
  );
  teardown.defer(() => eventStreams.closeAll());
  const app = createApp({
    router: appRouter,
    store,
    authenticator,
    logger,
    bodyLimitBytes: config.bodyLimitBytes,
    corsOrigins: config.corsOrigins,
    metrics,
    metricsAccess: config.metricsPort === undefined ? config.metrics : "off",
    rateLimits,
    trustedProxies: config.trustedProxies,
    writeHealth,
    logThrottle,
    eventStreams,
    webDir: config.webDir,
  });

  const server = createHttpServer(
    {
      headersTimeout: config.headersTimeoutMs,
      requestTimeout: config.requestTimeoutMs,
      keepAliveTimeout: config.keepAliveTimeoutMs,
      // Node checks the two timeouts above on this interval (30 s by default, too coarse for them).
      connectionsCheckingInterval: Math.min(1_000, config.headersTimeoutMs),
      // Node's check answers a bare 400; checkFraming answers it with the Error body.
      requireHostHeader: false,
    },
    checkFraming(koaListener(app.callback())),
  );
  const stallMarginMs = options.stallMarginMs ?? STALL_MARGIN_MS;
  server.timeout = config.requestTimeoutMs + stallMarginMs;
  server.on("clientError", answerClientError);
  server.on("connect", answerConnect);
  // Node answers an `Expect` other than 100-continue with a bare 417 and never shows it to the app.
  // RFC 9110 §10.1.1 lets a server ignore expectations it does not know: serve the request as usual.
  server.on("checkExpectation", (req, res) => server.emit("request", req, res));
  // Node would answer `Expect: 100-continue` with `100 Continue` at once; the app sends it only
  // once the headers are accepted (route, authentication, declared length), before reading the body.
  server.on("checkContinue", (req, res) => server.emit("request", req, res));
  // A client that half-closes after its request (`nc`, some proxies) still gets the answer: by
  // default Node aborts the request on the client's FIN, after it may already have been stored.
  Object.assign(server, { httpAllowHalfOpen: true });
  const connections = guardConnections(server, {
    maxConnections: config.maxConnections,
    onRefused: () => metrics.connectionsRefused.inc(),
    writeStallMs: config.requestTimeoutMs + stallMarginMs,
  });
  openConnections = () => connections.open;
  // Before the main port, so that it closes after the requests under way were answered: a scrape
  // during the shutdown still sees them.
  const metricsServer =
    config.metricsPort === undefined ? undefined : await startMetricsServer(config, metrics, logger);
  if (metricsServer !== undefined) {
    teardown.defer(async () => {
      metricsServer.closeAllConnections();
      await new Promise<void>((resolve) => metricsServer.close(() => resolve()));
    });
  }
  server.listen(config.port, config.host);
  await once(server, "listening");
  const pruner = startChangePruner({
    store,
    retentionMs: config.changesRetention,
    logger: logger.child({ component: "changes" }),
    clock: options.clock,
  });
  teardown.defer(() => pruner.stop());
  const dispatcher = startDispatcher({
    queue: store,
    policy: createOutboundPolicy(config.webhookAllowedHosts),
    // Background work, not a request: its lines say where they come from instead of a reqId.
    logger: logger.child({ component: "webhooks" }),
    logThrottle,
    metrics,
    timeoutMs: config.webhookTimeoutMs,
    retryBaseMs: config.webhookRetryBaseMs,
    clock: options.clock,
  });
  // Set by the first call of close(); a failed start never gets this far.
  let deadlineMs: number | undefined;
  teardown.defer(async () => {
    const deadline = Date.now() + (deadlineMs ?? config.shutdownTimeoutMs);
    // Requests finish while webhook delivery stops; events written meanwhile wait in the outbox.
    const drained = connections.drain({ idleGraceMs: IDLE_GRACE_MS, deadline });
    // Once the port stopped accepting: streams end after their last whole event, and their
    // clients reconnect (to another instance) with Last-Event-ID.
    eventStreams.closeAll();
    const [answeredAll] = await Promise.all([drained, dispatcher.stop()]);
    // Thrown once everything opened before is closed (the teardown goes on past a failure).
    if (!answeredAll) throw new Error("the shutdown deadline passed before every request was answered");
  });
  const { port } = server.address() as AddressInfo;
  const host = config.host.includes(":") ? `[${config.host}]` : config.host;
  const url = `http://${host === "0.0.0.0" || host === "[::]" ? "127.0.0.1" : host}:${port}`;

  const close = (options: { deadlineMs?: number } = {}) => {
    deadlineMs ??= options.deadlineMs ?? config.shutdownTimeoutMs;
    return teardown.disposeAsync();
  };

  const metricsAddress = metricsServer?.address() as AddressInfo | undefined;
  const metricsUrl =
    metricsAddress === undefined ? undefined : `http://${url.split("//")[1]!.split(":")[0]}:${metricsAddress.port}`;
  return { url, metricsUrl, port, server, store, close, [Symbol.asyncDispose]: () => close() };
}

/** One reader of the change log for the whole instance, and the streams it feeds. */
function startChangeFeed(
  log: ChangeLog,
  config: Config,
  {
    authenticator,
    logger,
    logThrottle,
    metrics,
    kernelSendBuffer,
  }: {
    authenticator: Authenticator;
    logger: Logger;
    logThrottle: LogThrottle;
    metrics: Metrics;
    kernelSendBuffer: KernelSendBuffer | undefined;
  },
  clock: Clock | undefined,
): EventStreams {
  const eventsLogger = logger.child({ component: "events" });
  const fanout = new ChangeFanout({
    log,
    format: changeFrames,
    formatPosition: positionFrame,
    pollMs: config.events.pollMs,
    clock,
    onReadError: (error) =>
      logThrottle.log(
        "events read",
        () => eventsLogger.warn({ err: error }, "reading the change log failed; retrying at the next change or poll"),
        (repeats) => eventsLogger.warn({ repeats }, "reading the change log failed (repeats)"),
      ),
  });
  const { maxPerToken, maxPerAddress, connectionShare, ...settings } = config.events;
  return new EventStreams({
    ...settings,
    limits: {
      maxPerToken,
      maxPerAddress,
      maxStreams: Math.max(1, Math.floor((config.maxConnections * connectionShare) / 100)),
    },
    clientAddress: clientAddressOf(config.trustedProxies),
    kernelSendBuffer,
    fanout,
    authenticator,
    metrics,
    logger: eventsLogger,
    clock,
  });
}

/** /metrics on its own port, for scrapers on a private network; everything else there is 404. */
async function startMetricsServer(config: Config, metrics: Metrics, logger: Logger): Promise<Server> {
  const server = createHttpServer(koaListener(createMetricsApp(metrics, logger).callback()));
  server.listen(config.metricsPort, config.host);
  await once(server, "listening");
  return server;
}

/**
 * Koa's request handler as Node's listener: Koa answers and logs every error of its own (our
 * error middleware turns each into a catalogued answer), so its promise never carries one.
 */
function koaListener(handle: (request: IncomingMessage, response: ServerResponse) => Promise<void>) {
  return (request: IncomingMessage, response: ServerResponse): void => void handle(request, response);
}
