import { timingSafeEqual } from "node:crypto";

import type { Logger } from "pino";

import { type Clock, every, systemClock } from "../clock.ts";
import { ApiError } from "../errors.ts";
import type { TokenRecord, TokenStore } from "../storage/token-store.ts";
import { hashOpaqueToken, opaqueTokenId } from "./opaque-token.ts";
import type { Authenticator, MemoryVerdict, Principal } from "./principal.ts";

/** How often the token change version is polled. */
const REFRESH_INTERVAL_MS = 250;
/**
 * A request is never answered from a cache whose last change check *started* longer ago than
 * this; if the background poll fell behind, the request checks first. So a revocation committed
 * at time T is honoured by every instance from T + 750 ms on, within the promised second.
 */
const MAX_STALENESS_MS = 750;
/**
 * Up to this many active tokens are all held in memory (a few hundred bytes each: a few MB at
 * most), so a token id that is not among them is refused without a lookup. Beyond it, records are
 * cached by id (known and unknown ones, up to this many) and a miss is looked up.
 */
const MAX_HELD_TOKENS = 10_000;
/**
 * Least time between two change checks started for requests that name an id not held (rather
 * than by the poll): however many such requests arrive, they cost at most 1000 / 50 = 20 cheap
 * reads a second, on top of the poll's 4.
 */
const ON_DEMAND_CHECK_GAP_MS = 50;

type CacheEntry = { secretHash: Buffer; principal: Principal; revoked: boolean } | null;

/** The token store's queries, named for the `plantstore_token_store_queries_total` metric. */
export type TokenStoreQuery = "change_version" | "active_tokens" | "find_token";

export type OpaqueTokenOptions = {
  store: TokenStore;
  logger: Logger;
  /** How often aggregated last-used times are written (one write for all tokens used since). */
  lastUsedFlushMs: number;
  /** Told of every query of the store made to authenticate (for the metrics). */
  onQuery?: (query: TokenStoreQuery) => void;
  /** How many active tokens are held at most; MAX_HELD_TOKENS unless a test needs the beyond. */
  maxHeld?: number;
  /** Times expiry, the cache's staleness, the poll and the flush; the wall clock unless a test moves one on. */
  clock?: Clock | undefined;
};

function entryOf(record: TokenRecord & { secretHash: Buffer }): Exclude<CacheEntry, null> {
  return {
    secretHash: record.secretHash,
    revoked: record.revokedAt !== null,
    principal: {
      kind: "opaque",
      tokenId: record.id,
      name: record.name,
      scopes: record.scopes,
      expiresAt: record.expiresAt,
      rateLimitKey: `opaque:${record.id}`,
    },
  };
}

/**
 * Issued `ps_…` tokens. The hot path touches no database. While there are at most
 * MAX_HELD_TOKENS active tokens, every one of them is held in memory, read again whenever the
 * store's change version moves (a background poll, one tiny read every 250 ms, sees any instance
 * create or revoke a token). A token id not held is then refused without a lookup, once a change
 * check that started after the request arrived has not found it either (so a token created a
 * moment ago on another instance works at once); requests waiting for such a check share one, at
 * most one every 50 ms. So a flood of made-up ids costs the database at most 24 reads a second
 * per instance, whatever its rate. With more active tokens than that, records are cached by id
 * and a miss is looked up. Expiry is checked on every request against the held expiry time.
 * Last-used times are aggregated in memory and written periodically and at shutdown, never once
 * per request.
 */
export class OpaqueTokenAuthenticator implements Authenticator {
  readonly #store: TokenStore;
  readonly #logger: Logger;
  readonly #onQuery: (query: TokenStoreQuery) => void;
  readonly #maxHeld: number;
  readonly #clock: Clock;
  #cache = new Map<string, CacheEntry>();
  /** True while #cache holds every active token: an id not in it is not a valid token. */
  #complete = false;
  /** Bumped whenever the cache is dropped, so a lookup that raced a drop is not cached. */
  #generation = 0;
  #version: number | undefined;
  #checkedAt = 0;
  #checkStartedAt = 0;
  #checking: Promise<void> | undefined;
  #nextCheck: Promise<void> | undefined;
  #pollFailing = false;
  #lastUsed = new Map<string, number>();
  readonly #stopTimers: Array<() => void> = [];
  #closed: Promise<void> | undefined;

  private constructor(options: OpaqueTokenOptions) {
    this.#store = options.store;
    this.#logger = options.logger;
    this.#onQuery = options.onQuery ?? (() => undefined);
    this.#maxHeld = options.maxHeld ?? MAX_HELD_TOKENS;
    this.#clock = options.clock ?? systemClock;
  }

  static async start(options: OpaqueTokenOptions): Promise<OpaqueTokenAuthenticator> {
    const authenticator = new OpaqueTokenAuthenticator(options);
    await authenticator.#refresh();
    const clock = authenticator.#clock;
    // The clock's timers do not keep the process alive on their own. Each returns its work, so a
    // test that moves the clock on knows when the poll or the flush has finished.
    const stopPoll = every(clock, REFRESH_INTERVAL_MS, () =>
      authenticator.#refresh().then(
        () => {
          if (authenticator.#pollFailing) authenticator.#logger.info("token store reachable again");
          authenticator.#pollFailing = false;
        },
        (error: unknown) => {
          if (!authenticator.#pollFailing)
            authenticator.#logger.warn({ err: error }, "cannot check the token store for revocations");
          authenticator.#pollFailing = true;
        },
      ),
    );
    const stopFlush = every(clock, options.lastUsedFlushMs, () => authenticator.#flushLastUsed());
    authenticator.#stopTimers.push(stopPoll, stopFlush);
    return authenticator;
  }

  /** Synchronous on the usual path (a fresh cache that has the id); a promise only when it must wait. */
  authenticate(token: string, digest?: Buffer): Principal | undefined | Promise<Principal | undefined> {
    const id = opaqueTokenId(token);
    if (id === undefined) return undefined;
    const verdict = this.#recall(id, token, digest);
    return verdict instanceof Promise
      ? verdict.then((v) => this.#settle(v, id, token, digest))
      : this.#settle(verdict, id, token, digest);
  }

  /**
   * From what is held, for an address over its failed-authentication limit: the same decision as
   * authenticate, which needs no lookup of the token either while every active token is held.
   * It may wait for a change check, shared by every request that waits (see ON_DEMAND_CHECK_GAP_MS).
   * Only with more active tokens than are held can an id be "unknown". The id is public, so telling
   * a held one from another by timing gives nothing away.
   */
  authenticateFromMemory(token: string, digest?: Buffer): MemoryVerdict | Promise<MemoryVerdict> {
    const id = opaqueTokenId(token);
    if (id === undefined) return "invalid";
    return this.#recall(id, token, digest);
  }

  #settle(
    verdict: MemoryVerdict,
    id: string,
    token: string,
    digest: Buffer | undefined,
  ): Principal | undefined | Promise<Principal | undefined> {
    if (verdict === "unknown")
      return this.#load(id).then((entry) => this.#check(entry, id, token, digest, this.#clock.now()));
    return verdict === "invalid" ? undefined : verdict;
  }

  #recall(id: string, token: string, digest: Buffer | undefined): MemoryVerdict | Promise<MemoryVerdict> {
    const arrived = this.#clock.now();
    if (arrived - this.#checkedAt > MAX_STALENESS_MS)
      return this.#unavailableOnFailure(this.#refresh()).then(() => this.#fromCache(id, token, digest, arrived));
    return this.#fromCache(id, token, digest, arrived);
  }

  #fromCache(
    id: string,
    token: string,
    digest: Buffer | undefined,
    arrived: number,
  ): MemoryVerdict | Promise<MemoryVerdict> {
    const held = this.#held(id, token, digest);
    if (held !== undefined) return held;
    // Not among the active tokens as of the last check, but it may have been created since (on
    // another instance, a moment ago): asked once more by a check that starts after it arrived.
    return this.#checkSince(arrived).then(() => this.#held(id, token, digest) ?? "invalid");
  }

  /** The verdict from the cache; undefined when every active token is held and this id is not. */
  #held(id: string, token: string, digest: Buffer | undefined): MemoryVerdict | undefined {
    const entry = this.#cache.get(id);
    if (entry !== undefined) return this.#check(entry, id, token, digest, this.#clock.now()) ?? "invalid";
    return this.#complete ? undefined : "unknown";
  }

  /**
   * Resolves once a change check that started after `arrived` has finished. Requests share the
   * next one, which starts when the one in flight ends and at least ON_DEMAND_CHECK_GAP_MS after
   * the previous one started.
   */
  #checkSince(arrived: number): Promise<void> {
    if (this.#checkStartedAt > arrived)
      return this.#checking === undefined ? Promise.resolve() : this.#unavailableOnFailure(this.#checking);
    this.#nextCheck ??= (async () => {
      try {
        await this.#noCheckInFlight();
        const wait = this.#checkStartedAt + ON_DEMAND_CHECK_GAP_MS - this.#clock.now();
        if (wait > 0) await new Promise<void>((resolve) => this.#clock.setTimer(resolve, wait));
        // The poll may have started one meanwhile, before some of the requests waiting arrived.
        await this.#noCheckInFlight();
      } finally {
        this.#nextCheck = undefined;
      }
      if (this.#closed !== undefined) throw new Error("the token authenticator is closed");
      await this.#refresh();
    })();
    return this.#unavailableOnFailure(this.#nextCheck);
  }

  async #noCheckInFlight(): Promise<void> {
    while (this.#checking !== undefined) await this.#checking.catch(() => undefined);
  }

  /** A change check a request waits for: without it a revoked token could pass, so refuse to decide rather than guess. */
  #unavailableOnFailure(check: Promise<void>): Promise<void> {
    return check.catch((error: unknown) => {
      throw new ApiError("UNAVAILABLE", "the token store is not reachable", { cause: error });
    });
  }

  #check(entry: CacheEntry, id: string, token: string, digest: Buffer | undefined, now: number): Principal | undefined {
    if (entry === null) return undefined;
    if (!timingSafeEqual(digest ?? hashOpaqueToken(token), entry.secretHash)) return undefined;
    const { principal } = entry;
    if (entry.revoked || (principal.expiresAt !== null && now >= principal.expiresAt)) return undefined;
    this.#lastUsed.set(id, now);
    return principal;
  }

  /** One token looked up by id: only while there are more active tokens than are held. */
  async #load(id: string): Promise<CacheEntry> {
    const generation = this.#generation;
    let record;
    try {
      this.#onQuery("find_token");
      record = await this.#store.findToken(id);
    } catch (error) {
      throw new ApiError("UNAVAILABLE", "the token store is not reachable", { cause: error });
    }
    const entry: CacheEntry = record === undefined ? null : entryOf(record);
    if (generation === this.#generation && !this.#complete) {
      if (this.#cache.size >= this.#maxHeld) this.#cache.delete(this.#cache.keys().next().value!);
      this.#cache.set(id, entry);
    }
    return entry;
  }

  /** One change check at a time; concurrent callers share it. */
  #refresh(): Promise<void> {
    this.#checking ??= (async () => {
      const started = this.#clock.now();
      this.#checkStartedAt = started;
      try {
        this.#onQuery("change_version");
        const version = await this.#store.tokenChangeVersion();
        if (version !== this.#version) {
          await this.#reload();
          this.#version = version;
        }
        this.#checkedAt = started;
      } finally {
        this.#checking = undefined;
      }
    })();
    return this.#checking;
  }

  /**
   * After a change: every active token, if they fit, else an empty cache filled by lookups. What
   * is held keeps answering meanwhile, as it did while the version was read: a request is answered
   * from a check that started at most 750 ms before it either way. If the read fails, nothing is
   * kept (a revoked token must not outlive it); the next check reads again, as the version is
   * recorded only after a read that succeeded.
   */
  async #reload(): Promise<void> {
    // Lookups that started before this are not cached: they may predate the change.
    this.#generation++;
    let records;
    try {
      this.#onQuery("active_tokens");
      records = await this.#store.activeTokens(this.#clock.now(), this.#maxHeld);
    } catch (error) {
      this.#cache = new Map();
      this.#complete = false;
      throw error;
    }
    this.#cache = new Map(records?.map((record) => [record.id, entryOf(record)]));
    this.#complete = records !== undefined;
  }

  async #flushLastUsed(): Promise<void> {
    if (this.#lastUsed.size === 0) return;
    const uses = this.#lastUsed;
    this.#lastUsed = new Map();
    try {
      await this.#store.recordLastUsed(uses);
    } catch (error) {
      // Kept for the next flush; a last-used time is information, not worth failing anything for.
      for (const [id, at] of uses) this.#lastUsed.set(id, Math.max(at, this.#lastUsed.get(id) ?? 0));
      this.#logger.warn({ err: error, tokens: uses.size }, "could not record token last-used times; will retry");
    }
  }

  close(): Promise<void> {
    this.#closed ??= (async () => {
      for (const stop of this.#stopTimers) stop();
      await this.#checking?.catch(() => undefined);
      await this.#flushLastUsed();
    })();
    return this.#closed;
  }
}
