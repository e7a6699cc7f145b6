import { ApiError } from "../errors.ts";

export type StreamLimitSettings = {
  /** Streams one token may hold at once. */
  maxPerToken: number;
  /** Streams one client address (group) may hold at once. */
  maxPerAddress: number;
  /** Streams the instance holds at most: their share of the connection cap. */
  maxStreams: number;
};

export type StreamRefusal = "token" | "address" | "capacity";

// A place is given back when one of the client's own streams ends, which the server cannot
// foresee; a lost connection's stream ends once its heartbeats go untaken for the stall bound.
const PER_CLIENT_RETRY_AFTER_S = 30;
// The instance's streams come and go all the time; a load balancer may also send the retry elsewhere.
const CAPACITY_RETRY_AFTER_S = 10;

function count(counts: Map<string, number>, key: string, by: number): void {
  const next = (counts.get(key) ?? 0) + by;
  if (next === 0) counts.delete(key);
  else counts.set(key, next);
}

/**
 * The places open streams hold: per token, per client address and in all. A stream takes its place
 * before it starts and gives it back when it ends, so a token, an address or all streams together
 * can never hold more connections than their caps, however fast they connect.
 */
export class StreamLimits {
  readonly #settings: StreamLimitSettings;
  readonly #byToken = new Map<string, number>();
  readonly #byAddress = new Map<string, number>();
  #total = 0;

  constructor(settings: StreamLimitSettings) {
    this.#settings = settings;
  }

  /**
   * A place for a stream of `token` from `address`, and what gives it back (once, however often
   * called); or the catalogued refusal, thrown, with `onRefused` told why.
   */
  take(token: string, address: string, onRefused?: (why: StreamRefusal) => void): () => void {
    const refusal = this.#refusal(token, address);
    if (refusal !== undefined) {
      onRefused?.(refusal);
      throw refusal === "capacity"
        ? new ApiError("STREAMS_FULL", "this instance holds as many event streams as it accepts; retry shortly", {
            headers: { "Retry-After": String(CAPACITY_RETRY_AFTER_S) },
          })
        : new ApiError(
            "TOO_MANY_STREAMS",
            `this ${refusal === "token" ? "token" : "client address"} holds as many open event streams as it may (${
              refusal === "token" ? this.#settings.maxPerToken : this.#settings.maxPerAddress
            }); close one first`,
            { headers: { "Retry-After": String(PER_CLIENT_RETRY_AFTER_S) } },
          );
    }
    count(this.#byToken, token, 1);
    count(this.#byAddress, address, 1);
    this.#total++;
    let given = false;
    return () => {
      if (given) return;
      given = true;
      count(this.#byToken, token, -1);
      count(this.#byAddress, address, -1);
      this.#total--;
    };
  }

  #refusal(token: string, address: string): StreamRefusal | undefined {
    if ((this.#byToken.get(token) ?? 0) >= this.#settings.maxPerToken) return "token";
    if ((this.#byAddress.get(address) ?? 0) >= this.#settings.maxPerAddress) return "address";
    if (this.#total >= this.#settings.maxStreams) return "capacity";
    return undefined;
  }
}
