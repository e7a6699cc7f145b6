import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ConsecutiveFailureBreaker, type CircuitState } from "./consecutive-failure-breaker.ts";

class Gone extends Error {}

function breaker(probe: () => Promise<void>, stallMs?: number) {
  const changes: CircuitState[] = [];
  const b = new ConsecutiveFailureBreaker({
    failureThreshold: 3,
    isFailure: (error) => error instanceof Gone,
    openError: () => new Error("open"),
    probe,
    probeIntervalMs: 500,
    ...(stallMs === undefined ? {} : { stallMs }),
    onStateChange: (state) => changes.push(state),
  });
  return { b, changes };
}

const gone = () => Promise.reject(new Gone());

beforeEach(() => {
  vi.useFakeTimers();
});
afterEach(() => {
  vi.useRealTimers();
});

describe("ConsecutiveFailureBreaker", () => {
  it("opens after the threshold of failures in a row, then fails calls without running them", async () => {
    const { b, changes } = breaker(() => Promise.reject(new Error("still down")));
    for (let i = 0; i < 3; i++) await expect(b.call(gone)).rejects.toBeInstanceOf(Gone);
    expect(b.state).toBe("open");
    expect(changes).toEqual(["open"]);
    const fn = vi.fn(() => Promise.resolve(1));
    await expect(b.call(fn)).rejects.toThrow("open");
    expect(fn).not.toHaveBeenCalled();
    b.dispose();
  });

  it("counts only failures in a row, and only those isFailure names", async () => {
    const { b } = breaker(() => Promise.resolve());
    await expect(b.call(gone)).rejects.toBeInstanceOf(Gone);
    await expect(b.call(gone)).rejects.toBeInstanceOf(Gone);
    await expect(b.call(() => Promise.resolve("ok"))).resolves.toBe("ok");
    await expect(b.call(gone)).rejects.toBeInstanceOf(Gone);
    await expect(b.call(gone)).rejects.toBeInstanceOf(Gone);
    await expect(b.call(() => Promise.reject(new Error("a bug, not an outage")))).rejects.toThrow("a bug");
    expect(b.state).toBe("closed");
    b.dispose();
  });

  it("closes when a probe succeeds, probing on the interval even while an earlier probe hangs", async () => {
    let answer: "hang" | "fail" | "ok" = "hang";
    const probe = vi.fn(() =>
      answer === "hang"
        ? new Promise<void>(() => {})
        : answer === "fail"
          ? Promise.reject(new Error("no"))
          : Promise.resolve(),
    );
    const { b, changes } = breaker(probe);
    for (let i = 0; i < 3; i++) await expect(b.call(gone)).rejects.toBeInstanceOf(Gone);
    await vi.advanceTimersByTimeAsync(500);
    expect(probe).toHaveBeenCalledTimes(1);
    answer = "fail";
    await vi.advanceTimersByTimeAsync(500);
    expect(b.state).toBe("open");
    answer = "ok";
    await vi.advanceTimersByTimeAsync(500);
    expect(b.state).toBe("closed");
    expect(changes).toEqual(["open", "closed"]);
    // Closed again: no more probes, and calls run.
    await vi.advanceTimersByTimeAsync(5_000);
    expect(probe).toHaveBeenCalledTimes(3);
    await expect(b.call(() => Promise.resolve(2))).resolves.toBe(2);
    b.dispose();
  });

  it("lets a call that started before the circuit opened settle with its own outcome", async () => {
    const { b } = breaker(() => new Promise<void>(() => {}));
    let finish!: (value: string) => void;
    const inFlight = b.call(() => new Promise<string>((resolve) => (finish = resolve)));
    for (let i = 0; i < 3; i++) await expect(b.call(gone)).rejects.toBeInstanceOf(Gone);
    expect(b.state).toBe("open");
    finish("committed");
    await expect(inFlight).resolves.toBe("committed");
    // Its success does not close the circuit: only a probe does.
    expect(b.state).toBe("open");
    b.dispose();
  });

  it("opens when a call stalls past stallMs and a probe gets no answer either, before the call fails", async () => {
    let probeAnswers = true;
    const probe = vi.fn(() => (probeAnswers ? Promise.resolve() : Promise.reject(new Error("silent"))));
    const { b, changes } = breaker(probe, 2_000);
    // A slow call while the dependency answers probes: busy, not gone.
    let finishSlow!: () => void;
    const slow = b.call(() => new Promise<void>((resolve) => (finishSlow = resolve)));
    await vi.advanceTimersByTimeAsync(3_000);
    expect(probe).toHaveBeenCalled();
    expect(b.state).toBe("closed");
    finishSlow();
    await slow;
    // A call that hangs while the probe gets no answer: gone.
    probeAnswers = false;
    const hung = b.call(() => new Promise<void>(() => {}));
    void hung;
    await vi.advanceTimersByTimeAsync(1_000);
    expect(b.state).toBe("closed");
    await vi.advanceTimersByTimeAsync(1_500);
    expect(b.state).toBe("open");
    expect(changes).toEqual(["open"]);
    await expect(b.call(() => Promise.resolve())).rejects.toThrow("open");
    b.dispose();
  });
});
