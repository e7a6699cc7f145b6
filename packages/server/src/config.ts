import { z } from "zod";

import type { RateLimitPolicy } from "./rate-limit/rate-limits.ts";
import { trustedProxyProblem } from "./trusted-proxies.ts";

/**
 * The only module that reads `process.env` (a lint rule keeps it so). Each setting is written
 * once, in `SETTINGS`: its variable, its zod type (text in, typed value out), its default and its
 * help. The `Config` type, the validation, the README's configuration table
 * (`pnpm --filter @plantstore/server config:docs`) and the bin's flag help all come from there.
 */
export type Setting<T extends z.ZodType = z.ZodType> = {
  env: string;
  /** Parses the variable's text, or `default` when it is unset. */
  type: T;
  /** Text used when the variable is unset, parsed like a set value; `""` is an empty list. */
  default?: string;
  /** One Markdown sentence or more, for the README table. */
  help: string;
  /** Never repeated in an error message: tokens, keys, URLs that may carry a password. */
  secret?: true;
};

const setting = <T extends z.ZodType>(definition: Setting<T>): Setting<T> => definition;

const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
const Port = int(0, 65535);

/** Comma-separated values, trimmed, empty ones dropped. */
const List = z.string().transform((text) =>
  text
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry.length > 0),
);

/** Comma-separated IPs, CIDRs and keywords (see trusted-proxies.ts); each one is checked. */
const TrustedProxies = List.transform((entries, ctx) => {
  for (const entry of entries) {
    const problem = trustedProxyProblem(entry);
    if (problem !== undefined) ctx.addIssue({ code: "custom", message: problem });
  }
  return entries;
});

/** `<requests>/<seconds>s` (e.g. `6000/60s`), or `off` (null). */
const rateLimit = (name: string) =>
  z
    .string()
    .regex(/^(?:off|[1-9]\d{0,8}\/[1-9]\d{0,5}s)$/, { error: "must be <requests>/<seconds>s (e.g. 6000/60s) or off" })
    .transform((text): RateLimitPolicy | null => {
      if (text === "off") return null;
      const [points, window] = text.slice(0, -1).split("/");
      return { name, points: Number(points), windowSec: Number(window) };
    });

/** A duration as `<n>d`, `<n>h`, `<n>m` or `<n>s` (e.g. `24h`), in milliseconds. */
const Duration = (min: string, minMs: number) =>
  z
    .string()
    .regex(/^[1-9]\d{0,6}[dhms]$/, { error: "must be <n>d, <n>h, <n>m or <n>s (e.g. 24h)" })
    .transform(
      (text) => Number(text.slice(0, -1)) * { d: 86_400_000, h: 3_600_000, m: 60_000, s: 1_000 }[text.at(-1)!]!,
    )
    .refine((ms) => ms >= minMs, { error: `must be at least ${min}` });

const HttpUrl = z.url({ protocol: /^https?$/, error: "must be an http(s) URL" });

export const DEFAULT_DATABASE_URL = "sqlite:./data/plantstore.db";

/**
 * Every setting, in the README's order. A nested object groups settings into one field of
 * `Config` (`postgres.poolSize`); `jwt` is combined into `JwtConfig` after parsing.
 */
export const SETTINGS = {
  port: setting({
    env: "PORT",
    type: Port,
    default: "3000",
    help: "Port to listen on (`0` picks a free one).",
  }),
  host: setting({
    env: "HOST",
    type: z.string().min(1),
    default: "127.0.0.1",
    help: "Address to bind; `0.0.0.0` to accept outside connections.",
  }),
  databaseUrl: setting({
    env: "DATABASE_URL",
    type: z.string().min(1),
    default: DEFAULT_DATABASE_URL,
    secret: true,
    help: "`sqlite:<path>`, `sqlite::memory:`, or `postgres://user:password@host:5432/database` (also `postgresql://`; libpq URL syntax, e.g. `?sslmode=require`). Relative SQLite paths are resolved against the working directory; every command names the database it opened (on stderr; `serve` in its `plantstore listening` log line), and says when it has just created a SQLite file.",
  }),
  /**
   * The connections of this process; together they bound every request during an outage (the
   * client waits 1 s longer than `statement_timeout`, then gives up on a silent connection).
   */
  postgres: {
    poolSize: setting({
      env: "PLANTSTORE_PG_POOL_SIZE",
      type: int(1, 1000),
      default: "10",
      help: "PostgreSQL connections one process may open (1 – 1000). Instances × workers × this must stay below the server's `max_connections`.",
    }),
    connectTimeoutMs: setting({
      env: "PLANTSTORE_PG_CONNECT_TIMEOUT_MS",
      type: int(100, 600_000),
      default: "5000",
      help: "Longest wait to open a PostgreSQL connection, or for a free one when the pool is busy; then 503.",
    }),
    queryTimeoutMs: setting({
      env: "PLANTSTORE_PG_QUERY_TIMEOUT_MS",
      type: int(100, 3_600_000),
      default: "10000",
      help: "Longest a statement may run (PostgreSQL `statement_timeout`); the process waits 1 s more for the answer, then drops the connection as lost; then 503.",
    }),
  },
  postgresBreaker: {
    failureThreshold: setting({
      env: "PLANTSTORE_PG_BREAKER_FAILURES",
      type: int(1, 10_000),
      default: "3",
      help: "PostgreSQL timeouts or refusals in a row that open the circuit breaker: requests that need the database then get 503 (`50300`) at once until a probe finds it answering (see _Outages_).",
    }),
  },
  tokens: setting({
    env: "PLANTSTORE_TOKENS",
    type: List,
    default: "",
    secret: true,
    help: "Comma-separated bearer tokens accepted with every scope and no per-token limit. For bootstrapping and development; issue real tokens with `plantstore-server tokens create`.",
  }),
  tokenLastUsedFlushMs: setting({
    env: "PLANTSTORE_TOKEN_LAST_USED_FLUSH_MS",
    type: int(100, 3_600_000),
    default: "30000",
    help: "How often the aggregated last-used times of issued tokens are written (also at shutdown).",
  }),
  jwt: {
    issuer: setting({
      env: "PLANTSTORE_JWT_ISSUER",
      type: z.string().min(1).optional(),
      help: "Required `iss` of accepted JWTs. Setting any `PLANTSTORE_JWT_*`/`PLANTSTORE_JWKS_URL` turns JWTs on and needs issuer, audience and one key source.",
    }),
    audience: setting({
      env: "PLANTSTORE_JWT_AUDIENCE",
      type: z.string().min(1).optional(),
      help: "Required `aud` of accepted JWTs.",
    }),
    jwksUrl: setting({
      env: "PLANTSTORE_JWKS_URL",
      type: HttpUrl.optional(),
      secret: true,
      help: "http(s) URL of the identity provider's JWKS (asymmetric keys).",
    }),
    secret: setting({
      env: "PLANTSTORE_JWT_SECRET",
      // HS256 needs a key at least as long as its output (RFC 7518 §3.2): 32 bytes.
      type: z.string().min(32, { error: "must be at least 32 characters" }).optional(),
      secret: true,
      help: "Shared HMAC secret (at least 32 characters) instead of a JWKS.",
    }),
    clockSkewSec: setting({
      env: "PLANTSTORE_JWT_CLOCK_SKEW_S",
      type: int(0, 300),
      default: "30",
      help: "Seconds of clock skew allowed on `exp`, `nbf` and `iat` (0–300).",
    }),
    cooldownMs: setting({
      env: "PLANTSTORE_JWKS_COOLDOWN_MS",
      type: int(0, 3_600_000),
      default: "30000",
      help: "Least time between two JWKS fetches caused by an unknown `kid`.",
    }),
    maxAgeMs: setting({
      env: "PLANTSTORE_JWKS_MAX_AGE_MS",
      type: int(100, 86_400_000),
      default: "300000",
      help: "The JWKS is fetched again after this long, so a withdrawn key stops working.",
    }),
  },
  rateLimits: {
    token: setting({
      env: "PLANTSTORE_RATE_LIMIT_TOKEN",
      type: rateLimit("token"),
      default: "6000/60s",
      help: "Requests per token (per `sub` for JWTs): `<n>/<seconds>s`, or `off`.",
    }),
    authFailures: setting({
      env: "PLANTSTORE_RATE_LIMIT_AUTH_FAILURES",
      type: rateLimit("auth-failures"),
      default: "20/60s",
      help: "Failed authentications per client address (an IPv6 client per /64) before it gets 429: `<n>/<seconds>s`, or `off`.",
    }),
  },
  trustedProxies: setting({
    env: "PLANTSTORE_TRUSTED_PROXIES",
    type: TrustedProxies,
    default: "",
    help: "Comma-separated IPs, CIDR ranges (`10.0.0.0/8`, `fd00::/8`) and the keywords `loopback`, `linklocal`, `uniquelocal`: proxies whose `X-Forwarded-For` names the client (read from the right past every trusted hop; see _Tokens, scopes and rate limits_). Empty: the client address is the TCP peer and the header is ignored. A listed proxy must append the address it saw (nginx: `$proxy_add_x_forwarded_for`). Anything else, and ranges that trust every address (`/0`), stop the start.",
  }),
  redisUrl: setting({
    env: "REDIS_URL",
    type: z.url({ protocol: /^rediss?$/, error: "must be a redis:// or rediss:// URL" }).optional(),
    secret: true,
    help: "`redis://` or `rediss://`: share rate-limit counters across instances. Down or hung: per-instance counts, with a warning (a circuit breaker skips a hung Redis after 3 failed calls).",
  }),
  redisPrefix: setting({
    env: "PLANTSTORE_REDIS_PREFIX",
    type: z.string().min(1).max(200),
    default: "plantstore:ratelimit:",
    help: "Prefix of every Redis key the service writes.",
  }),
  bodyLimitBytes: setting({
    env: "PLANTSTORE_BODY_LIMIT",
    type: int(64, 16 * 1024 * 1024),
    default: "16384",
    help: 'Largest accepted request body, in bytes (64 – 16 MiB). Whatever its size, a body nested deeper than 512 levels of arrays and objects gets 400 (`40004`, "the body is nested deeper than 512 levels").',
  }),
  headersTimeoutMs: setting({
    env: "PLANTSTORE_HEADERS_TIMEOUT_MS",
    type: int(100, 600_000),
    default: "10000",
    help: "Time a client has to send the request headers; then 408 with an `Error` body.",
  }),
  requestTimeoutMs: setting({
    env: "PLANTSTORE_REQUEST_TIMEOUT_MS",
    type: int(100, 3_600_000),
    default: "30000",
    help: "Time a client has to send the whole request (headers and body); then 408. Past it plus 5 s without a byte moving either way, a connection is closed, and so is one whose client has taken none of its answers' bytes for as long, however many requests it pipelined (see [Limits](#limits)).",
  }),
  keepAliveTimeoutMs: setting({
    env: "PLANTSTORE_KEEP_ALIVE_TIMEOUT_MS",
    type: int(100, 600_000),
    default: "5000",
    help: "How long an idle keep-alive connection stays open between requests.",
  }),
  maxConnections: setting({
    env: "PLANTSTORE_MAX_CONNECTIONS",
    type: int(1, 1_000_000),
    default: "12500",
    help: "Open connections the API port holds at most (per worker process); beyond, `503` (`50301`), except `GET`/`HEAD /healthz`, which is always answered. Keep it below `ulimit -n`. The default leaves 10,000 for `GET /plants/events` streams (see `PLANTSTORE_EVENTS_CONNECTION_SHARE`) and 2,500 for requests.",
  }),
  shutdownTimeoutMs: setting({
    env: "PLANTSTORE_SHUTDOWN_TIMEOUT_MS",
    type: int(100, 3_600_000),
    default: "20000",
    help: "Time a stop (SIGTERM/SIGINT) may take; past it the process exits 1 (see _Stopping_).",
  }),
  events: {
    heartbeatMs: setting({
      env: "PLANTSTORE_EVENTS_HEARTBEAT_MS",
      type: int(10, 15_000),
      default: "15000",
      help: "`GET /plants/events`: a `: heartbeat` comment is written to every open stream this often (at most 15 s), so proxies and clients see it alive.",
    }),
    maxPerToken: setting({
      env: "PLANTSTORE_EVENTS_MAX_PER_TOKEN",
      type: int(1, 1_000_000),
      default: "32",
      help: "`GET /plants/events`: open streams one token may hold on this instance (per `sub` for JWTs; `PLANTSTORE_TOKENS` count too); beyond, `429` (`42901`). A subscriber needs one stream per filter it watches, a few at most, plus the ones a lost connection leaves open until the server notices; 32 is ample for that and keeps one token to a small part of the instance. Raise it for a token shared by many clients (a read-only token in a web page).",
    }),
    maxPerAddress: setting({
      env: "PLANTSTORE_EVENTS_MAX_PER_ADDRESS",
      type: int(1, 1_000_000),
      default: "256",
      help: "`GET /plants/events`: open streams one client address may hold on this instance, whatever its tokens (an IPv6 client per /64; behind proxies, the address `PLANTSTORE_TRUSTED_PROXIES` finds); beyond, `429` (`42901`). Higher than the per-token cap because many subscribers can share an address (an office behind NAT); set the trusted proxies, or every stream through a proxy counts as the proxy's.",
    }),
    connectionShare: setting({
      env: "PLANTSTORE_EVENTS_CONNECTION_SHARE",
      type: int(1, 100),
      default: "80",
      help: "`GET /plants/events`: the percentage of `PLANTSTORE_MAX_CONNECTIONS` that streams may hold on this instance; beyond, `503` (`50306`), so streams, which stay open, never take the connections ordinary requests need. With the defaults, 10,000 streams (each subscriber with its own token or address) and 2,500 other connections.",
    }),
    bufferLimitBytes: setting({
      env: "PLANTSTORE_EVENTS_BUFFER_LIMIT",
      type: int(1024, 64 * 1024 * 1024),
      default: "262144",
      help: "`GET /plants/events`: a stream whose client has not taken more than this many bytes is closed after its last whole event (a slow consumer); it reconnects with `Last-Event-ID` and misses nothing. The bytes the kernel holds for the stream count too: its send buffer is capped at a quarter of this (`SO_SNDBUF`, through koffi's prebuilt binary), and on Linux what it holds is read and added once writes back up. So each open stream holds at most about this much memory, the server's and the kernel's together, plus the events of its last write. Where the buffer cannot be capped (Windows), the server warns at start and counts its own bytes alone.",
    }),
    authCheckMs: setting({
      env: "PLANTSTORE_EVENTS_AUTH_CHECK_MS",
      type: int(100, 60_000),
      default: "1000",
      help: "`GET /plants/events`: how often the token of each open stream is checked again. A stream whose token was revoked or expired closes within this time plus 1 s (how long an issued token's revocation takes to reach every instance).",
    }),
    pollMs: setting({
      env: "PLANTSTORE_EVENTS_POLL_MS",
      type: int(10, 60_000),
      default: "1000",
      help: "`GET /plants/events`: how often the change log is read without a wake-up (a lost PostgreSQL notification delays an event by at most this much).",
    }),
  },
  corsOrigins: setting({
    env: "PLANTSTORE_CORS_ORIGINS",
    type: List,
    default: "",
    help: "Comma-separated browser origins allowed to call the API cross-origin (`*` for any). Empty: same-origin only, and `OPTIONS` is a 405. A preflight for a path or method that does not exist gets the 404 or 405 the request would.",
  }),
  webDir: setting({
    env: "PLANTSTORE_WEB_DIR",
    type: z.string().min(1).optional(),
    help: "A folder holding the built web console (`pnpm --filter @plantstore/web build` writes `apps/web/dist`): served at `/app` on the API port, so the console calls the API on its own origin and needs no CORS setting. Its files need no token (the console asks for one). Unset: no `/app`.",
  }),
  durability: setting({
    env: "PLANTSTORE_DURABILITY",
    type: z.enum(["full", "normal"]),
    default: "full",
    help: "SQLite only. `full`: a 200 means the plant is on disk (fsync per group commit) and survives power loss. `normal`: survives a crash of the process, but the last moments before a power loss or OS crash can be lost; faster. PostgreSQL always commits with `synchronous_commit=on`.",
  }),
  sqliteBusyTimeoutMs: setting({
    env: "PLANTSTORE_SQLITE_BUSY_TIMEOUT_MS",
    type: int(0, 600_000),
    default: "5000",
    help: "SQLite only. How long a write waits for the write lock while another connection (another process, the `sqlite3` shell) holds it; then its requests get 503 `STORAGE_BUSY` (`50302`). Writes wait in turn, so a lock held for long delays every waiting group by up to this much each.",
  }),
  workers: setting({
    env: "PLANTSTORE_WORKERS",
    type: int(1, 64),
    default: "1",
    help: "HTTP worker processes sharing the port (node:cluster) on one database; needs a fixed `PORT`. On SQLite the processes' commits serialise on the file lock: measure before relying on it (the repository's benchmark, `pnpm bench --workers 1,2`, measured two workers slower than one on two cores).",
  }),
  metrics: setting({
    env: "PLANTSTORE_METRICS",
    type: z.enum(["token", "public", "off"]),
    default: "token",
    help: "Who may read `GET /metrics` (Prometheus text) on the API port: `token` (any valid API token), `public` (no token; only on a private network), `off`.",
  }),
  metricsPort: setting({
    env: "PLANTSTORE_METRICS_PORT",
    type: Port.optional(),
    help: "Serve `/metrics` on this separate port instead, without a token (bind `HOST` privately, or firewall it); the API port then has no `/metrics`.",
  }),
  webhookAllowedHosts: setting({
    env: "PLANTSTORE_WEBHOOK_ALLOWED_HOSTS",
    type: List,
    default: "",
    help: "Comma-separated hosts or CIDRs (`127.0.0.1`, `10.0.0.0/8`, `hooks.internal`) that webhook URLs may reach although private, loopback or link-local.",
  }),
  webhookTimeoutMs: setting({
    env: "PLANTSTORE_WEBHOOK_TIMEOUT_MS",
    type: int(100, 120_000),
    default: "10000",
    help: "Time one delivery attempt may take. A claimed delivery is leased for 4× this (at most 2× plus 5 s): after a crash, others send it again once the lease ends.",
  }),
  webhookRetryBaseMs: setting({
    env: "PLANTSTORE_WEBHOOK_RETRY_BASE_MS",
    type: int(10, 3_600_000),
    default: "5000",
    help: "First retry delay; it doubles per attempt up to 6 h, with ±50% jitter.",
  }),
  changesRetention: setting({
    env: "PLANTSTORE_CHANGES_RETENTION",
    type: Duration("1m", 60_000),
    default: "24h",
    help: "How long the change log keeps a change (`<n>d`, `<n>h`, `<n>m` or `<n>s`; at least `1m`): a `GET /plants/events` client may resume after any position this recent; one older gets `event: reset` and re-lists. The newest change is always kept. Every instance prunes about every tenth of this (at most every minute).",
  }),
  logLevel: setting({
    env: "PLANTSTORE_LOG_LEVEL",
    type: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]),
    default: "info",
    help: "`fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`. Logs are JSON lines on stdout (pino).",
  }),
};

type Table = { [key: string]: Setting | { [key: string]: Setting } };
/** What a table parses to: each setting's zod output, groups as nested objects. */
type Values<T> = { [K in keyof T]: T[K] extends Setting<infer S> ? z.output<S> : Values<T[K]> };
type Settings = Values<typeof SETTINGS>;

export type JwtConfig = {
  issuer: string;
  audience: string;
  keys: { jwksUrl: string; cooldownMs: number; maxAgeMs: number } | { secret: string };
  clockSkewSec: number;
};

/** What the server runs with: `SETTINGS` parsed, with the JWT settings combined. */
export type Config = { [K in keyof Settings]: K extends "jwt" ? JwtConfig | undefined : Settings[K] };

const isSetting = (entry: Setting | Table[string]): entry is Setting => typeof entry.env === "string";

/** Every setting of the table, flat, in its order. */
export function allSettings(table: Table = SETTINGS): Setting[] {
  return Object.values(table).flatMap((entry) => (isSetting(entry) ? [entry] : Object.values(entry)));
}

/** `env PORT, default 3000`: where a command-line flag's value comes from when it is not given. */
export function envNote(entry: Setting): string {
  return entry.default === undefined || entry.default === ""
    ? `env ${entry.env}`
    : `env ${entry.env}, default ${entry.default}`;
}

type Env = Readonly<Record<string, string | undefined>>;

/** One line per problem, naming the variable; never one that quotes a secret's value. */
function problems(entry: Setting, text: string | undefined, issues: readonly z.core.$ZodIssue[]): string[] {
  const value = text?.trim() ?? "";
  return issues.map((issue) => {
    const leaks = entry.secret === true && value !== "" && issue.message.includes(value);
    return `${entry.env}: ${leaks ? "is invalid (the value is not shown: it may be secret)" : issue.message}`;
  });
}

function parseTable(table: Table, env: Env, found: Map<string, string[]>): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const [key, entry] of Object.entries(table)) {
    if (!isSetting(entry)) {
      values[key] = parseTable(entry, env, found);
      continue;
    }
    const text = env[entry.env] ?? entry.default;
    const parsed = entry.type.safeParse(text);
    if (parsed.success) values[key] = parsed.data;
    else found.set(entry.env, problems(entry, text, parsed.error.issues));
  }
  return values;
}

/** The JWT settings as one `JwtConfig` (undefined when none is set), or why they do not fit together. */
function jwtConfig(jwt: Settings["jwt"]): { config: JwtConfig | undefined } | { problem: string } {
  const { issuer, audience, jwksUrl, secret } = jwt;
  if (issuer === undefined && audience === undefined && jwksUrl === undefined && secret === undefined) {
    return { config: undefined };
  }
  // Accepting both would invite algorithm confusion (an HMAC made with a public key).
  if (jwksUrl !== undefined && secret !== undefined) {
    return { problem: "set PLANTSTORE_JWKS_URL or PLANTSTORE_JWT_SECRET, not both" };
  }
  if (jwksUrl === undefined && secret === undefined) {
    return { problem: "JWT needs PLANTSTORE_JWKS_URL or PLANTSTORE_JWT_SECRET" };
  }
  if (issuer === undefined || audience === undefined) {
    return { problem: "JWT needs both PLANTSTORE_JWT_ISSUER and PLANTSTORE_JWT_AUDIENCE" };
  }
  const keys =
    jwksUrl !== undefined ? { jwksUrl, cooldownMs: jwt.cooldownMs, maxAgeMs: jwt.maxAgeMs } : { secret: secret! };
  return { config: { issuer, audience, keys, clockSkewSec: jwt.clockSkewSec } };
}

/**
 * Reads and checks every setting, and throws one error listing every invalid one
 * (`invalid configuration: PORT: …; PLANTSTORE_WORKERS: …`).
 */
export function loadConfig(env: Env = process.env): Config {
  const found = new Map<string, string[]>();
  const settings = parseTable(SETTINGS, env, found) as Settings;
  const problemsFound = [...found.values()].flat();
  // Combining JWT settings that are invalid on their own would only repeat what is reported.
  const jwt = allSettings(SETTINGS.jwt).some((entry) => found.has(entry.env)) ? undefined : jwtConfig(settings.jwt);
  if (jwt !== undefined && "problem" in jwt) problemsFound.push(jwt.problem);
  if (problemsFound.length > 0 || jwt === undefined || "problem" in jwt) {
    throw new Error(`invalid configuration: ${problemsFound.join("; ")}`);
  }
  return {
    ...settings,
    // A request cannot be given less time than its headers alone.
    requestTimeoutMs: Math.max(settings.requestTimeoutMs, settings.headersTimeoutMs),
    jwt: jwt.config,
  };
}
