import type { Redis } from "ioredis";
import type { Logger } from "pino";
import { RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";

import { type Clock, systemClock } from "../clock.ts";
import type { Metrics } from "../metrics.ts";
import type { CircuitBreaker } from "../resilience/circuit-breaker.ts";
import { addressGroup } from "./address-group.ts";
import { MemoryWindows } from "./memory-windows.ts";

/** `points` requests per `windowSec` seconds (a fixed window per key). */
export type RateLimitPolicy = { name: string; points: number; windowSec: number };

export type LimitDecision = {
  allowed: boolean;
  /** The IETF RateLimit fields, plus `Retry-After` when refused. */
  headers: Record<string, string>;
};

/** How long a fallback warning stays quiet after it was logged. */
const WARN_EVERY_MS = 10_000;
const MAX_BLOCKED_ADDRESSES = 10_000;

/**
 * The `RateLimit-Policy` and `RateLimit` response fields in the structured-field syntax of
 * draft-ietf-httpapi-ratelimit-headers-10 (§3, §4): `"token";q=6000;w=60` and `"token";r=5999;t=42`
 * (quota, window seconds; remaining, seconds until the window resets).
 */
function rateLimitFields(policy: RateLimitPolicy, remaining: number, msBeforeReset: number): Record<string, string> {
  const reset = Math.max(0, Math.ceil(msBeforeReset / 1000));
  return {
    "RateLimit-Policy": `"${policy.name}";q=${policy.points};w=${policy.windowSec}`,
    RateLimit: `"${policy.name}";r=${remaining};t=${reset}`,
  };
}

function refusal(policy: RateLimitPolicy, msBeforeReset: number): LimitDecision {
  // Retry-After is never earlier than the reset the RateLimit field announces (draft §6).
  const retryAfter = Math.max(1, Math.ceil(msBeforeReset / 1000));
  return {
    allowed: false,
    headers: { ...rateLimitFields(policy, 0, msBeforeReset), "Retry-After": String(retryAfter) },
  };
}

/** The shared counters' Redis, and the circuit breaker every call to it goes through. */
type SharedCounting = { client: Redis; prefix: string; breaker: CircuitBreaker };

/**
 * One policy's counters: in memory for a single instance, or in Redis (shared by every instance)
 * when a client is given. When Redis fails or is not connected, the count falls back to this
 * instance's memory — fail open to a per-instance limit rather than refusing every request or
 * dropping limits altogether — with a warning in the log and on the metrics. While the breaker is
 * open (Redis failed several calls in a row: refused, or hung until the command timeout), the
 * count goes to memory at once, so a frozen Redis does not add its timeout to every request.
 */
class Counter {
  readonly policy: RateLimitPolicy;
  readonly #memory: MemoryWindows;
  readonly #shared: { limiter: RateLimiterRedis; breaker: CircuitBreaker } | undefined;
  readonly #onFallback: (error: unknown) => void;

  constructor(
    policy: RateLimitPolicy,
    redis: SharedCounting | undefined,
    clock: Clock,
    onFallback: (error: unknown) => void,
  ) {
    this.policy = policy;
    this.#onFallback = onFallback;
    this.#memory = new MemoryWindows({ points: policy.points, windowSec: policy.windowSec, clock });
    // Redis times its windows itself (a key's expiry), whatever the clock says.
    this.#shared =
      redis === undefined
        ? undefined
        : {
            limiter: new RateLimiterRedis({
              points: policy.points,
              duration: policy.windowSec,
              storeClient: redis.client,
              keyPrefix: `${redis.prefix}${policy.name}`,
              // Answer from memory at once while disconnected, instead of queueing behind a reconnect.
              rejectIfRedisNotReady: true,
            }),
            breaker: redis.breaker,
          };
  }

  consume(key: string): Promise<RateLimiterRes> {
    // Without Redis, the memory limiter's own promise: no async frame of ours on every request.
    return this.#shared === undefined ? this.#memory.consume(key) : this.#consumeShared(this.#shared, key);
  }

  async #consumeShared(
    shared: { limiter: RateLimiterRedis; breaker: CircuitBreaker },
    key: string,
  ): Promise<RateLimiterRes> {
    try {
      return await shared.breaker.call(() => shared.limiter.consume(key));
    } catch (thrown) {
      if (thrown instanceof RateLimiterRes) throw thrown;
      this.#onFallback(thrown);
    }
    return this.#memory.consume(key);
  }
}

/**
 * A client address over its failed-authentication limit, until its window ends. A request from it
 * is refused unless its token is valid (http/authenticate.ts decides that from what is held in
 * memory, which covers every token but two rare cases); a token memory cannot decide gets a full
 * check (a token-database lookup, a key-set fetch) only in the address's one slot: at most one
 * failed full check per `window / points` seconds, the pace the limit allows any address anyway,
 * however fast the requests come.
 */
export class AddressBlock {
  readonly until: number;
  readonly #policy: RateLimitPolicy;
  readonly #metrics: Metrics;
  readonly #clock: Clock;
  #fullCheckAfter = 0;

  constructor(until: number, policy: RateLimitPolicy, metrics: Metrics, clock: Clock) {
    this.until = until;
    this.#policy = policy;
    this.#metrics = metrics;
    this.#clock = clock;
  }

  /** The refusal, with Retry-After at the end of the window, counted in the metrics. */
  refuse(): LimitDecision {
    this.#metrics.rateLimited.inc({ reason: "auth_failures" });
    return refusal(this.#policy, this.until - this.#clock.now());
  }

  /** Takes the slot for one full check; false while it is taken. */
  claimFullCheck(): boolean {
    const now = this.#clock.now();
    if (now < this.#fullCheckAfter) return false;
    this.#fullCheckAfter = now + (this.#policy.windowSec * 1000) / this.#policy.points;
    return true;
  }

  /** A full check that found a valid token frees the slot at once: valid tokens never use up the pace. */
  releaseFullCheck(): void {
    this.#fullCheckAfter = 0;
  }
}

export type RateLimitsOptions = {
  /** Per token (per subject for JWTs); null turns it off. */
  token: RateLimitPolicy | null;
  /** Failed authentications per client address; null turns it off. */
  authFailures: RateLimitPolicy | null;
  redis?: SharedCounting | undefined;
  logger: Logger;
  metrics: Metrics;
  /** Times the windows counted in memory and the address blocks; the wall clock unless a test moves one on. */
  clock?: Clock | undefined;
};

/**
 * The two limits: requests per token, and failed authentications per client address (to slow
 * down guessing). Once an address is over its failure limit it is on a local list until the
 * window ends (an AddressBlock), so requests from it cost no Redis round trip; other instances
 * learn of it at that address's next failure there.
 */
export class RateLimits {
  readonly #token: Counter | undefined;
  readonly #authFailures: Counter | undefined;
  readonly #blocked = new Map<string, AddressBlock>();
  readonly #logger: Logger;
  readonly #metrics: Metrics;
  readonly #clock: Clock;
  #lastWarning = -Infinity;

  constructor(options: RateLimitsOptions) {
    this.#logger = options.logger;
    this.#metrics = options.metrics;
    const clock = (this.#clock = options.clock ?? systemClock);
    const onFallback = (error: unknown) => this.#fallback(error);
    const counter = (policy: RateLimitPolicy | null) =>
      policy === null ? undefined : new Counter(policy, options.redis, clock, onFallback);
    this.#token = counter(options.token);
    this.#authFailures = counter(options.authFailures);
  }

  #fallback(error: unknown): void {
    this.#metrics.rateLimitFallbacks.inc();
    const now = this.#clock.now();
    if (now - this.#lastWarning < WARN_EVERY_MS) return;
    this.#lastWarning = now;
    this.#logger.warn(
      { err: error instanceof Error ? { message: error.message } : String(error) },
      "Redis unavailable: rate limits are counted per instance until it is back",
    );
  }

  /** Counts one request for this token; undefined when the per-token limit is off. */
  async consumeToken(key: string): Promise<LimitDecision | undefined> {
    const counter = this.#token;
    if (counter === undefined) return undefined;
    try {
      const res = await counter.consume(key);
      return { allowed: true, headers: rateLimitFields(counter.policy, res.remainingPoints, res.msBeforeNext) };
    } catch (thrown) {
      if (!(thrown instanceof RateLimiterRes)) throw thrown;
      this.#metrics.rateLimited.inc({ reason: "token" });
      return refusal(counter.policy, thrown.msBeforeNext);
    }
  }

  /**
   * This address's block while it is over its failure limit, else undefined. The address is asked
   * for only when some address is blocked at all, so the usual request does not work it out.
   */
  addressBlocked(addressOf: () => string): AddressBlock | undefined {
    if (this.#blocked.size === 0) return undefined;
    const address = addressGroup(addressOf());
    const block = this.#blocked.get(address);
    if (block === undefined) return undefined;
    if (block.until <= this.#clock.now()) {
      this.#blocked.delete(address);
      return undefined;
    }
    return block;
  }

  /**
   * Counts a failed authentication against the address's group (see addressGroup: every spelling
   * of one IPv4 address, or one IPv6 /64); a refusal when that puts the group over its limit.
   */
  async recordAuthFailure(clientAddress: string): Promise<LimitDecision | undefined> {
    const counter = this.#authFailures;
    if (counter === undefined) return undefined;
    const address = addressGroup(clientAddress);
    try {
      await counter.consume(address);
      return undefined;
    } catch (thrown) {
      if (!(thrown instanceof RateLimiterRes)) throw thrown;
      if (this.#blocked.size >= MAX_BLOCKED_ADDRESSES) this.#blocked.delete(this.#blocked.keys().next().value!);
      const block = new AddressBlock(
        this.#clock.now() + thrown.msBeforeNext,
        counter.policy,
        this.#metrics,
        this.#clock,
      );
      this.#blocked.set(address, block);
      return block.refuse();
    }
  }
}
