import { timingSafeEqual } from "node:crypto";
import type { Logger } from "pino";
import { ApiError } from "../errors.ts";
import type { TokenStore } from "../storage/token-store.ts";
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
/** Known and unknown ids cached; beyond this the oldest entries go. */
const MAX_CACHED = 10_000;

type CacheEntry = { secretHash: Buffer; principal: Principal; revoked: boolean } | null;

export type OpaqueTokenOptions = {
  store: TokenStore;
  logger: Logger;
  /** How often aggregated last-used times are written (one write for all tokens used since). */
  lastUsedFlushMs: number;
};

/**
 * Issued `ps_…` tokens. The hot path touches no database: records are cached in memory by id, and
 * a background poll of the store's change version (one tiny read every 250 ms) drops the cache
 * whenever any instance creates or revokes a token. Expiry is checked on every request against
 * the cached expiry time. Last-used times are aggregated in memory and written periodically and
 * at shutdown, never once per request.
 */
export class OpaqueTokenAuthenticator implements Authenticator {
  readonly #store: TokenStore;
  readonly #logger: Logger;
  readonly #cache = new Map<string, CacheEntry>();
  /** Bumped whenever the cache is dropped, so a lookup that raced a drop is not cached. */
  #generation = 0;
  #version: number | undefined;
  #checkedAt = 0;
  #checking: Promise<void> | undefined;
  #pollFailing = false;
  #lastUsed = new Map<string, number>();
  readonly #timers: NodeJS.Timeout[] = [];
  #closed: Promise<void> | undefined;

  private constructor(options: OpaqueTokenOptions) {
    this.#store = options.store;
    this.#logger = options.logger;
  }

  static async start(options: OpaqueTokenOptions): Promise<OpaqueTokenAuthenticator> {
    const authenticator = new OpaqueTokenAuthenticator(options);
    await authenticator.#refresh();
    const poll = setInterval(() => {
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
      );
    }, REFRESH_INTERVAL_MS);
    const flush = setInterval(() => void authenticator.#flushLastUsed(), options.lastUsedFlushMs);
    // Neither keeps the process alive on its own.
    poll.unref();
    flush.unref();
    authenticator.#timers.push(poll, flush);
    return authenticator;
  }

  /** Synchronous on the usual path (a fresh cache that has the id); a promise only when it must wait. */
  authenticate(token: string, digest?: Buffer): Principal | undefined | Promise<Principal | undefined> {
    const id = opaqueTokenId(token);
    if (id === undefined) return undefined;
    const now = Date.now();
    if (now - this.#checkedAt > MAX_STALENESS_MS)
      return this.#refreshOrUnavailable().then(() => this.#lookUp(id, token, digest, Date.now()));
    return this.#lookUp(id, token, digest, now);
  }

  /** The change check a request waits for when the background poll fell behind. */
  #refreshOrUnavailable(): Promise<void> {
    return this.#refresh().catch((error: unknown) => {
      // Without a fresh check a revoked token could still pass: refuse to decide rather than guess.
      throw new ApiError("UNAVAILABLE", "the token store is not reachable", { cause: error });
    });
  }

  /**
   * From the cache alone, for an address over its failed-authentication limit: a cached id (or
   * one cached as unknown) is decided by the same constant-time comparison and expiry and
   * revocation checks; an id not cached is "unknown". The id is public, so telling a cached one
   * from another by timing gives nothing away. When the poll fell behind, this waits for the same
   * change check every request shares (one at a time, not one per request), as authenticate does.
   */
  authenticateFromMemory(token: string, digest?: Buffer): MemoryVerdict | Promise<MemoryVerdict> {
    const id = opaqueTokenId(token);
    if (id === undefined) return "invalid";
    if (Date.now() - this.#checkedAt > MAX_STALENESS_MS)
      return this.#refreshOrUnavailable().then(() => this.#recall(id, token, digest));
    return this.#recall(id, token, digest);
  }

  #recall(id: string, token: string, digest: Buffer | undefined): MemoryVerdict {
    const entry = this.#cache.get(id);
    if (entry === undefined) return "unknown";
    return this.#check(entry, id, token, digest, Date.now()) ?? "invalid";
  }

  #lookUp(
    id: string,
    token: string,
    digest: Buffer | undefined,
    now: number,
  ): Principal | undefined | Promise<Principal | undefined> {
    const entry = this.#cache.get(id);
    if (entry === undefined) return this.#load(id).then((loaded) => this.#check(loaded, id, token, digest, now));
    return this.#check(entry, id, token, digest, now);
  }

  #check(entry: CacheEntry, id: string, token: string, digest: Buffer | undefined, now: number): Principal | undefined {
    if (entry === null) return undefined;
    if (!timingSafeEqual(digest ?? hashOpaqueToken(token), entry.secretHash)) return undefined;
    const { principal } = entry;
    if (entry.revoked || (principal.expiresAt !== null && now >= principal.expiresAt)) return undefined;
    this.#lastUsed.set(id, now);
    return principal;
  }

  async #load(id: string): Promise<CacheEntry> {
    const generation = this.#generation;
    let record;
    try {
      record = await this.#store.findToken(id);
    } catch (error) {
      throw new ApiError("UNAVAILABLE", "the token store is not reachable", { cause: error });
    }
    const entry: CacheEntry =
      record === undefined
        ? null
        : {
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
    if (generation === this.#generation) {
      if (this.#cache.size >= MAX_CACHED) this.#cache.delete(this.#cache.keys().next().value!);
      this.#cache.set(id, entry);
    }
    return entry;
  }

  /** One change check at a time; concurrent callers share it. */
  #refresh(): Promise<void> {
    this.#checking ??= (async () => {
      const started = Date.now();
      try {
        const version = await this.#store.tokenChangeVersion();
        if (version !== this.#version) {
          this.#version = version;
          this.#cache.clear();
          this.#generation++;
        }
        this.#checkedAt = started;
      } finally {
        this.#checking = undefined;
      }
    })();
    return this.#checking;
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
      for (const timer of this.#timers) clearInterval(timer);
      await this.#checking?.catch(() => undefined);
      await this.#flushLastUsed();
    })();
    return this.#closed;
  }
}
