import { describe, expect, it } from "vitest";

import { CircuitBreaker, CircuitOpenError, type CircuitState, type Schedule } from "./circuit-breaker.ts";

/** A clock the test moves: timers run only when `advance` passes their time. */
function manualClock() {
  let now = 0;
  let timers: Array<{ at: number; run: () => void }> = [];
  const schedule: Schedule = (run, ms) => {
    const timer = { at: now + ms, run };
    timers.push(timer);
    return () => {
      timers = timers.filter((t) => t !== timer);
    };
  };
  const advance = async (ms: number) => {
    const until = now + ms;
    for (;;) {
      const next = timers.filter((t) => t.at <= until).sort((a, b) => a.at - b.at)[0];
      if (next === undefined) break;
      timers = timers.filter((t) => t !== next);
      now = next.at;
      next.run();
      // Let the probe's promise chain settle before the next timer.
      for (let i = 0; i < 10; i++) await Promise.resolve();
    }
    now = until;
  };
  return { schedule, advance, pending: () => timers.length };
}

const failing = () => Promise.reject(new Error("Command timed out"));

function breakerWith(
  probe: () => Promise<unknown>,
  extra: { isFailure?: (error: unknown) => boolean; failureThreshold?: number } = {},
) {
  const clock = manualClock();
  const breaker = new CircuitBreaker({
    dependency: "Redis",
    failureThreshold: 3,
    probe,
    probeIntervalMs: 1_000,
    probeTimeoutMs: 250,
    schedule: clock.schedule,
    ...extra,
  });
  const changes: CircuitState[] = [];
  breaker.onStateChange((state) => changes.push(state));
  return { breaker, clock, changes };
}

describe("CircuitBreaker", () => {
  it("opens after the threshold of consecutive failures, then refuses at once without calling", async () => {
    const { breaker, changes } = breakerWith(() => Promise.resolve());
    for (let i = 0; i < 2; i++) await expect(breaker.call(failing)).rejects.toThrow("Command timed out");
    // A success in between starts the count again.
    await expect(breaker.call(() => Promise.resolve("ok"))).resolves.toBe("ok");
    for (let i = 0; i < 2; i++) await expect(breaker.call(failing)).rejects.toThrow("Command timed out");
    expect(breaker.state).toBe("closed");
    await expect(breaker.call(failing)).rejects.toThrow("Command timed out");
    expect(breaker.state).toBe("open");
    expect(changes).toEqual(["open"]);

    let called = false;
    const refused = breaker.call(() => {
      called = true;
      return Promise.resolve();
    });
    await expect(refused).rejects.toBeInstanceOf(CircuitOpenError);
    await expect(refused).rejects.toThrow("Redis is not answering");
    expect(called).toBe(false);
  });

  it("does not count the dependency's answers (isFailure false) as failures", async () => {
    const refusal = new Error("over the limit");
    const { breaker } = breakerWith(() => Promise.resolve(), { isFailure: (e) => e !== refusal });
    for (let i = 0; i < 5; i++) await expect(breaker.call(() => Promise.reject(refusal))).rejects.toBe(refusal);
    expect(breaker.state).toBe("closed");
  });

  it("probes every interval while open and closes when the probe answers; failed or hung probes keep it open", async () => {
    const answers: Array<"fail" | "hang" | "ok"> = ["fail", "hang", "ok"];
    let probes = 0;
    const { breaker, clock, changes } = breakerWith(() => {
      probes++;
      const answer = answers.shift();
      if (answer === "fail") return Promise.reject(new Error("Connection is closed."));
      if (answer === "hang") return new Promise(() => undefined);
      return Promise.resolve("PONG");
    });
    for (let i = 0; i < 3; i++) await expect(breaker.call(failing)).rejects.toThrow();
    expect(breaker.state).toBe("open");

    await clock.advance(999);
    expect(probes).toBe(0);
    await clock.advance(1);
    expect(probes).toBe(1);
    expect(breaker.state).toBe("open");
    // The second probe hangs: its timeout (250 ms) counts it failed and the next is scheduled.
    await clock.advance(1_000);
    expect(probes).toBe(2);
    await clock.advance(249);
    expect(breaker.state).toBe("open");
    await clock.advance(1 + 1_000);
    expect(probes).toBe(3);
    expect(breaker.state).toBe("closed");
    expect(changes).toEqual(["open", "closed"]);
    expect(clock.pending()).toBe(0);
    await expect(breaker.call(() => Promise.resolve(1))).resolves.toBe(1);
  });

  it("ignores failures of calls that were already waiting when it opened, and stops probing when stopped", async () => {
    let probes = 0;
    const { breaker, clock, changes } = breakerWith(() => {
      probes++;
      return Promise.reject(new Error("down"));
    });
    const late: Array<(error: Error) => void> = [];
    const waiting = Array.from({ length: 5 }, () =>
      breaker.call(() => new Promise((_, reject) => late.push(reject))).catch(() => undefined),
    );
    for (const reject of late) reject(new Error("Command timed out"));
    await Promise.all(waiting);
    expect(changes).toEqual(["open"]);
    await clock.advance(1_000);
    expect(probes).toBe(1);
    breaker.stop();
    await clock.advance(10_000);
    expect(probes).toBe(1);
    expect(clock.pending()).toBe(0);
  });

  it("starts a probe every interval even while an earlier one still hangs, so recovery is seen at the next one", async () => {
    let answer: "hang" | "ok" = "hang";
    let probes = 0;
    const clock = manualClock();
    const breaker = new CircuitBreaker({
      dependency: "PostgreSQL",
      failureThreshold: 1,
      probe: () => {
        probes++;
        return answer === "hang" ? new Promise(() => undefined) : Promise.resolve();
      },
      probeIntervalMs: 500,
      // Longer than the interval: a sequential prober would wait this out before trying again.
      probeTimeoutMs: 1_000,
      schedule: clock.schedule,
    });
    await expect(breaker.call(failing)).rejects.toThrow();
    await clock.advance(500);
    expect(probes).toBe(1);
    answer = "ok";
    await clock.advance(500);
    expect(probes).toBe(2);
    expect(breaker.state).toBe("closed");
    // Closed: the hung probe's timeout and the next probe are cancelled.
    expect(clock.pending()).toBe(0);
  });

  it("lets a call that started before it opened settle with its own outcome; that success does not close it", async () => {
    const { breaker } = breakerWith(() => new Promise(() => undefined));
    let finish!: (value: string) => void;
    const inFlight = breaker.call(() => new Promise<string>((resolve) => (finish = resolve)));
    for (let i = 0; i < 3; i++) await expect(breaker.call(failing)).rejects.toThrow("Command timed out");
    expect(breaker.state).toBe("open");
    finish("committed");
    await expect(inFlight).resolves.toBe("committed");
    expect(breaker.state).toBe("open");
  });

  it("opens at once on trip(), with its cause, and probes as after failures", async () => {
    let probes = 0;
    const { breaker, clock } = breakerWith(() => {
      probes++;
      return Promise.resolve();
    });
    const causes: unknown[] = [];
    breaker.onStateChange((_, cause) => causes.push(cause));
    const stalled = new Error("stalled");
    breaker.trip(stalled);
    expect(breaker.state).toBe("open");
    await expect(breaker.call(() => Promise.resolve())).rejects.toBeInstanceOf(CircuitOpenError);
    await clock.advance(1_000);
    expect(probes).toBe(1);
    expect(breaker.state).toBe("closed");
    expect(causes).toEqual([stalled, undefined]);
  });

  it("refuses a threshold below one", () => {
    expect(() => breakerWith(() => Promise.resolve(), { failureThreshold: 0 })).toThrow(RangeError);
  });
});
