import { z } from "zod";
import { trustedProxyProblem } from "./trusted-proxies.ts";
import type { RateLimitPolicy } from "./rate-limit/rate-limits.ts";

/** `<requests>/<seconds>s` (e.g. `6000/60s`), or `off`. */
const RateLimitText = z
  .string()
  .regex(/^(?:off|[1-9]\d{0,8}\/[1-9]\d{0,5}s)$/, { error: "must be <requests>/<seconds>s (e.g. 6000/60s) or off" });

function rateLimitPolicy(name: string, text: string): RateLimitPolicy | null {
  if (text === "off") return null;
  const [points, window] = text.slice(0, -1).split("/");
  return { name, points: Number(points), windowSec: Number(window) };
}

/** Comma-separated IPs, CIDRs and keywords (see trusted-proxies.ts); each one is checked. */
const TrustedProxies = z
  .string()
  .optional()
  .transform((text, ctx) => {
    const entries = (text ?? "")
      .split(",")
      .map((entry) => entry.trim())
      .filter((entry) => entry.length > 0);
    for (const entry of entries) {
      const problem = trustedProxyProblem(entry);
      if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
    }
    return entries;
  });

const HttpUrl = z.url({ protocol: /^https?$/, error: "must be an http(s) URL" });

/**
 * The only module that reads `process.env`. Every variable is validated here and documented in
 * the configuration table in this package's README; everything else receives a typed `Config`.
 */
const EnvSchema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(3000),
  HOST: z.string().min(1).default("127.0.0.1"),
  DATABASE_URL: z.string().min(1).optional(),
  PLANTSTORE_TOKENS: z.string().optional(),
  PLANTSTORE_BODY_LIMIT: z.coerce
    .number()
    .int()
    .min(64)
    .max(16 * 1024 * 1024)
    .default(16 * 1024),
  PLANTSTORE_HEADERS_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(10_000),
  PLANTSTORE_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(30_000),
  PLANTSTORE_KEEP_ALIVE_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(5_000),
  PLANTSTORE_MAX_CONNECTIONS: z.coerce.number().int().min(1).max(1_000_000).default(10_000),
  PLANTSTORE_SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(20_000),
  PLANTSTORE_WORKERS: z.coerce.number().int().min(1).max(64).default(1),
  PLANTSTORE_DURABILITY: z.enum(["full", "normal"]).default("full"),
  PLANTSTORE_SQLITE_BUSY_TIMEOUT_MS: z.coerce.number().int().min(0).max(600_000).default(5_000),
  PLANTSTORE_CORS_ORIGINS: z.string().optional(),
  PLANTSTORE_TRUSTED_PROXIES: TrustedProxies,
  PLANTSTORE_METRICS: z.enum(["token", "public", "off"]).default("token"),
  PLANTSTORE_METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  PLANTSTORE_WEBHOOK_ALLOWED_HOSTS: z.string().optional(),
  PLANTSTORE_WEBHOOK_TIMEOUT_MS: z.coerce.number().int().min(100).max(120_000).default(10_000),
  PLANTSTORE_WEBHOOK_RETRY_BASE_MS: z.coerce.number().int().min(10).max(3_600_000).default(5_000),
  PLANTSTORE_PG_POOL_SIZE: z.coerce.number().int().min(1).max(1000).default(10),
  PLANTSTORE_PG_CONNECT_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(5_000),
  PLANTSTORE_PG_QUERY_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(10_000),
  PLANTSTORE_PG_BREAKER_FAILURES: z.coerce.number().int().min(1).max(10_000).default(3),
  PLANTSTORE_LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  PLANTSTORE_JWT_ISSUER: z.string().min(1).optional(),
  PLANTSTORE_JWT_AUDIENCE: z.string().min(1).optional(),
  PLANTSTORE_JWKS_URL: HttpUrl.optional(),
  // HS256 needs a key at least as long as its output (RFC 7518 §3.2): 32 bytes.
  PLANTSTORE_JWT_SECRET: z.string().min(32, { error: "must be at least 32 characters" }).optional(),
  PLANTSTORE_JWT_CLOCK_SKEW_S: z.coerce.number().int().min(0).max(300).default(30),
  PLANTSTORE_JWKS_COOLDOWN_MS: z.coerce.number().int().min(0).max(3_600_000).default(30_000),
  PLANTSTORE_JWKS_MAX_AGE_MS: z.coerce.number().int().min(100).max(86_400_000).default(300_000),
  PLANTSTORE_RATE_LIMIT_TOKEN: RateLimitText.default("6000/60s"),
  PLANTSTORE_RATE_LIMIT_AUTH_FAILURES: RateLimitText.default("20/60s"),
  REDIS_URL: z.url({ protocol: /^rediss?$/, error: "must be a redis:// or rediss:// URL" }).optional(),
  PLANTSTORE_REDIS_PREFIX: z.string().min(1).max(200).default("plantstore:ratelimit:"),
  PLANTSTORE_TOKEN_LAST_USED_FLUSH_MS: z.coerce.number().int().min(100).max(3_600_000).default(30_000),
});

export type JwtConfig = {
  issuer: string;
  audience: string;
  keys: { jwksUrl: string; cooldownMs: number; maxAgeMs: number } | { secret: string };
  clockSkewSec: number;
};

export type Config = {
  port: number;
  host: string;
  /** `sqlite:<path>`, `sqlite::memory:`, `postgres://…`; unset means `sqlite:./data/plantstore.db`. */
  databaseUrl: string;
  /** Static bearer tokens with every scope, for bootstrapping and development (`PLANTSTORE_TOKENS`, comma-separated). */
  tokens: string[];
  bodyLimitBytes: number;
  /** Browser origins allowed to call the API cross-origin (`*` for any); empty means same-origin only. */
  corsOrigins: string[];
  /** HTTP worker processes sharing the port (node:cluster); each commits its own groups to the one database. */
  workers: number;
  /** `full`: a 200 survives power loss; `normal`: survives a process crash only (see this package's README). */
  durability: "full" | "normal";
  /** SQLite: how long a write waits for a lock another connection holds before it is answered 503 STORAGE_BUSY. */
  sqliteBusyTimeoutMs: number;
  /** Time allowed for a request's headers, and for the whole request (headers and body). */
  headersTimeoutMs: number;
  requestTimeoutMs: number;
  /** How long an idle keep-alive connection stays open between requests. */
  keepAliveTimeoutMs: number;
  /** Open connections the API port holds at most; beyond, new ones get one 503 and are closed. */
  maxConnections: number;
  /** Time a stop (SIGTERM/SIGINT) may take; past it, unfinished requests are cut and the process exits 1. */
  shutdownTimeoutMs: number;
  /** Who may read /metrics on the API port: `token` (any valid API token), `public`, or `off`. */
  metrics: "token" | "public" | "off";
  /** When set, /metrics is served only on this separate port, without a token (bind it privately). */
  metricsPort: number | undefined;
  /** Hosts or CIDRs webhook URLs may reach although private/loopback/link-local. */
  webhookAllowedHosts: string[];
  webhookTimeoutMs: number;
  /** First retry delay; it doubles per attempt (see webhooks/retry-policy.ts). */
  webhookRetryBaseMs: number;
  /**
   * PostgreSQL connections of this process: pool size, the longest wait for a connection, and the
   * longest a statement may take (server statement_timeout; the client waits 1 s longer, then
   * gives up on a connection whose network went silent). Together they bound every request
   * during an outage.
   */
  postgres: { poolSize: number; connectTimeoutMs: number; queryTimeoutMs: number };
  /**
   * PostgreSQL timeouts or refusals in a row after which requests get 503 at once, until a probe
   * (every 0.5 s) finds the database answering again.
   */
  postgresBreaker: { failureThreshold: number };
  logLevel: z.infer<typeof EnvSchema>["PLANTSTORE_LOG_LEVEL"];
  /** Bearer JWTs from an identity provider; undefined when not configured. */
  jwt: JwtConfig | undefined;
  /**
   * Peers whose `X-Forwarded-For` is believed (IPs, CIDRs, `loopback`, `linklocal`,
   * `uniquelocal`); empty: the client address is the TCP peer.
   */
  trustedProxies: string[];
  /** Per token, and per client address for failed authentications; null is off. */
  rateLimits: { token: RateLimitPolicy | null; authFailures: RateLimitPolicy | null };
  /** When set, rate-limit counters are shared through this Redis by every instance. */
  redisUrl: string | undefined;
  /** Prefix of every Redis key this service writes. */
  redisPrefix: string;
  /** How often aggregated last-used times of API tokens are written. */
  tokenLastUsedFlushMs: number;
};

function jwtConfig(e: z.infer<typeof EnvSchema>): JwtConfig | undefined {
  const {
    PLANTSTORE_JWT_ISSUER: issuer,
    PLANTSTORE_JWT_AUDIENCE: audience,
    PLANTSTORE_JWKS_URL: jwksUrl,
    PLANTSTORE_JWT_SECRET: secret,
  } = e;
  if (issuer === undefined && audience === undefined && jwksUrl === undefined && secret === undefined) return undefined;
  if (jwksUrl !== undefined && secret !== undefined) {
    // Accepting both would invite algorithm confusion (an HMAC made with a public key).
    throw new Error("invalid configuration: set PLANTSTORE_JWKS_URL or PLANTSTORE_JWT_SECRET, not both");
  }
  if (jwksUrl === undefined && secret === undefined) {
    throw new Error("invalid configuration: JWT needs PLANTSTORE_JWKS_URL or PLANTSTORE_JWT_SECRET");
  }
  if (issuer === undefined || audience === undefined) {
    throw new Error("invalid configuration: JWT needs both PLANTSTORE_JWT_ISSUER and PLANTSTORE_JWT_AUDIENCE");
  }
  return {
    issuer,
    audience,
    keys:
      jwksUrl !== undefined
        ? { jwksUrl, cooldownMs: e.PLANTSTORE_JWKS_COOLDOWN_MS, maxAgeMs: e.PLANTSTORE_JWKS_MAX_AGE_MS }
        : { secret: secret! },
    clockSkewSec: e.PLANTSTORE_JWT_CLOCK_SKEW_S,
  };
}

export const DEFAULT_DATABASE_URL = "sqlite:./data/plantstore.db";

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  const parsed = EnvSchema.safeParse(env);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new Error(`invalid configuration: ${issue?.path.join(".")}: ${issue?.message}`);
  }
  const e = parsed.data;
  return {
    port: e.PORT,
    host: e.HOST,
    databaseUrl: e.DATABASE_URL ?? DEFAULT_DATABASE_URL,
    tokens: (e.PLANTSTORE_TOKENS ?? "")
      .split(",")
      .map((t) => t.trim())
      .filter((t) => t.length > 0),
    bodyLimitBytes: e.PLANTSTORE_BODY_LIMIT,
    corsOrigins: (e.PLANTSTORE_CORS_ORIGINS ?? "")
      .split(",")
      .map((o) => o.trim())
      .filter((o) => o.length > 0),
    durability: e.PLANTSTORE_DURABILITY,
    sqliteBusyTimeoutMs: e.PLANTSTORE_SQLITE_BUSY_TIMEOUT_MS,
    workers: e.PLANTSTORE_WORKERS,
    headersTimeoutMs: e.PLANTSTORE_HEADERS_TIMEOUT_MS,
    requestTimeoutMs: Math.max(e.PLANTSTORE_REQUEST_TIMEOUT_MS, e.PLANTSTORE_HEADERS_TIMEOUT_MS),
    keepAliveTimeoutMs: e.PLANTSTORE_KEEP_ALIVE_TIMEOUT_MS,
    maxConnections: e.PLANTSTORE_MAX_CONNECTIONS,
    shutdownTimeoutMs: e.PLANTSTORE_SHUTDOWN_TIMEOUT_MS,
    metrics: e.PLANTSTORE_METRICS,
    metricsPort: e.PLANTSTORE_METRICS_PORT,
    webhookAllowedHosts: (e.PLANTSTORE_WEBHOOK_ALLOWED_HOSTS ?? "")
      .split(",")
      .map((h) => h.trim())
      .filter((h) => h.length > 0),
    webhookTimeoutMs: e.PLANTSTORE_WEBHOOK_TIMEOUT_MS,
    webhookRetryBaseMs: e.PLANTSTORE_WEBHOOK_RETRY_BASE_MS,
    postgres: {
      poolSize: e.PLANTSTORE_PG_POOL_SIZE,
      connectTimeoutMs: e.PLANTSTORE_PG_CONNECT_TIMEOUT_MS,
      queryTimeoutMs: e.PLANTSTORE_PG_QUERY_TIMEOUT_MS,
    },
    postgresBreaker: { failureThreshold: e.PLANTSTORE_PG_BREAKER_FAILURES },
    logLevel: e.PLANTSTORE_LOG_LEVEL,
    jwt: jwtConfig(e),
    trustedProxies: e.PLANTSTORE_TRUSTED_PROXIES,
    rateLimits: {
      token: rateLimitPolicy("token", e.PLANTSTORE_RATE_LIMIT_TOKEN),
      authFailures: rateLimitPolicy("auth-failures", e.PLANTSTORE_RATE_LIMIT_AUTH_FAILURES),
    },
    redisUrl: e.REDIS_URL,
    redisPrefix: e.PLANTSTORE_REDIS_PREFIX,
    tokenLastUsedFlushMs: e.PLANTSTORE_TOKEN_LAST_USED_FLUSH_MS,
  };
}
