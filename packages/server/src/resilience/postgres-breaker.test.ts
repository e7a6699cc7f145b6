import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

import { toApiError } from "../errors.ts";
import { StoreError, StoreUnavailableError } from "../storage/store-errors.ts";
import { type CircuitChangeReason, PostgresBreaker } from "./postgres-breaker.ts";

// Never used: the probe is the test's, so no connection is made.
const DATABASE = { url: "postgres://nobody@127.0.0.1:1/none", poolSize: 1, connectTimeoutMs: 100, queryTimeoutMs: 100 };

function breaker(probe: () => Promise<void>) {
  const changes: Array<[string, CircuitChangeReason]> = [];
  const b = new PostgresBreaker(DATABASE, {
    failureThreshold: 3,
    probe,
    probeIntervalMs: 500,
    probeTimeoutMs: 1_000,
    stallMs: 2_000,
    onStateChange: (state, reason) => changes.push([state, reason]),
  });
  return { b, changes };
}

const unreachable = () => Promise.reject(new StoreUnavailableError("the database is not reachable: ECONNREFUSED"));

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe("PostgresBreaker on the shared CircuitBreaker", () => {
  it("opens after consecutive unreachable failures and then answers 503 UNAVAILABLE with Retry-After 1 at once", async () => {
    const { b, changes } = breaker(() => Promise.reject(new Error("still down")));
    for (let i = 0; i < 3; i++) await expect(b.call(unreachable)).rejects.toBeInstanceOf(StoreUnavailableError);
    expect(b.state).toBe("open");
    expect(changes).toEqual([["open", { stalled: false }]]);
    const fn = vi.fn(() => Promise.resolve(1));
    const refused = b.call(fn);
    await expect(refused).rejects.toBeInstanceOf(StoreUnavailableError);
    await expect(refused).rejects.toThrow(/circuit is open/);
    expect(fn).not.toHaveBeenCalled();
    const answer = toApiError(await refused.catch((error: unknown) => error));
    expect(answer.status).toBe(503);
    expect(answer.body.error).toBe(50300);
    expect(answer.headers).toEqual({ "Retry-After": "1" });
    b.dispose();
  });

  it("never counts a busy database (lock waits, statement timeouts) towards opening", async () => {
    const { b } = breaker(() => Promise.resolve());
    const busy = () => Promise.reject(new StoreError("busy", "the database is busy, lock wait"));
    for (let i = 0; i < 10; i++) await expect(b.call(busy)).rejects.toMatchObject({ kind: "busy" });
    expect(b.state).toBe("closed");
    b.dispose();
  });

  it("opens when a statement stalls past stallMs and a probe gets no answer either, before the statement fails", async () => {
    let probeAnswers = true;
    const probe = vi.fn(() => (probeAnswers ? Promise.resolve() : Promise.reject(new Error("silent"))));
    const { b, changes } = breaker(probe);
    // A slow statement while the database answers probes: busy, not gone.
    let finishSlow!: () => void;
    const slow = b.call(() => new Promise<void>((resolve) => (finishSlow = resolve)));
    await vi.advanceTimersByTimeAsync(3_000);
    expect(probe).toHaveBeenCalled();
    expect(b.state).toBe("closed");
    finishSlow();
    await slow;
    // A statement that hangs while the probe gets no answer: gone.
    probeAnswers = false;
    // Its caller is answered when the circuit opens, not when (if ever) the statement ends.
    const hung = expect(b.call(() => new Promise<void>(() => {}))).rejects.toThrow(/circuit is open/);
    await vi.advanceTimersByTimeAsync(1_000);
    expect(b.state).toBe("closed");
    await vi.advanceTimersByTimeAsync(1_500);
    expect(b.state).toBe("open");
    expect(changes).toEqual([["open", { stalled: true }]]);
    await hung;
    await expect(b.call(() => Promise.resolve())).rejects.toThrow(/circuit is open/);
    // The probe every 500 ms closes it once the database answers again.
    probeAnswers = true;
    await vi.advanceTimersByTimeAsync(500);
    expect(b.state).toBe("closed");
    expect(changes.at(-1)).toEqual(["closed", { stalled: false }]);
    b.dispose();
  });
});
