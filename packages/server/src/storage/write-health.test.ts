import { eventually } from "@plantstore/test-support/eventually";
import { describe, expect, it } from "vitest";

import type { Clock } from "../clock.ts";
import { StoreError, StoreUnavailableError } from "./store-errors.ts";
import { WriteHealth } from "./write-health.ts";

/** The rule alone, on a clock the test moves; what the stores report is tested through HTTP (test/storage/sqlite/). */
function health() {
  let now = 0;
  let timers: Array<{ due: number; callback: () => unknown }> = [];
  const clock: Clock = {
    now: () => now,
    setTimer: (callback, ms) => {
      const timer = { due: now + ms, callback };
      timers.push(timer);
      return () => (timers = timers.filter((t) => t !== timer));
    },
  };
  const writes = new WriteHealth({ stallMs: 1_000, clock });
  const advance = (ms: number) => {
    now += ms;
    const due = timers.filter((t) => t.due <= now);
    timers = timers.filter((t) => t.due > now);
    for (const timer of due) timer.callback();
  };
  return { writes, advance };
}

describe("WriteHealth", () => {
  it("is healthy while writes succeed, and a write in flight is not a problem until it stalls", () => {
    const { writes, advance } = health();
    const done = writes.begin();
    advance(1_000);
    expect(writes.problem()).toBeUndefined();
    advance(1);
    expect(writes.problem()).toEqual({ kind: "busy", stalledMs: 1_001 });
    done();
    expect(writes.problem()).toBeUndefined();
  });

  it("names the storage failure of the last write until a write succeeds", () => {
    const { writes } = health();
    writes.begin()(new StoreError("full", "disk full"));
    expect(writes.problem()).toEqual({ kind: "full" });
    writes.begin()(new Error("a bug, not the storage"));
    expect(writes.problem()).toEqual({ kind: "full" });
    writes.begin()();
    expect(writes.problem()).toBeUndefined();
  });

  it("is unhealthy at once when told writes fail without one tried (a circuit opened), until a probe succeeds", async () => {
    const { writes } = health();
    writes.fail(new StoreUnavailableError("the database is not reachable: the circuit is open"));
    expect(writes.problem()).toEqual({ kind: "unavailable" });
    await expect(writes.check(() => Promise.reject(new StoreUnavailableError("still open")))).resolves.toEqual({
      kind: "unavailable",
    });
    await expect(writes.check(() => Promise.resolve())).resolves.toBeUndefined();
  });

  it("probes with a write after a failure, shares one probe among callers, and recovers when it succeeds", async () => {
    const { writes } = health();
    writes.begin()(new StoreError("busy", "locked"));
    let probes = 0;
    let succeed = false;
    const probe = async () => {
      probes++;
      if (!succeed) throw new StoreError("busy", "still locked");
    };
    const [a, b] = await Promise.all([writes.check(probe), writes.check(probe)]);
    expect([a, b, probes]).toEqual([{ kind: "busy" }, { kind: "busy" }, 1]);
    succeed = true;
    expect(await writes.check(probe)).toBeUndefined();
    expect(await writes.check(probe)).toBeUndefined();
    expect(probes).toBe(2);
  });

  it("does not probe while a write is under way: that write's outcome will tell", async () => {
    const { writes } = health();
    writes.begin()(new StoreError("full", "disk full"));
    const done = writes.begin();
    let probes = 0;
    expect(await writes.check(async () => void probes++)).toEqual({ kind: "full" });
    expect(probes).toBe(0);
    done();
    expect(await writes.check(async () => void probes++)).toBeUndefined();
  });

  it("waits for a probe at most the stall bound, then answers with what it knew", async () => {
    const { writes, advance } = health();
    writes.begin()(new StoreError("busy", "locked"));
    let release = () => {};
    const probe = () => new Promise<void>((resolve) => (release = resolve));
    let answer: unknown = "none yet";
    const checked = writes.check(probe).then((problem) => (answer = problem));
    advance(999);
    await Promise.resolve();
    expect(answer).toBe("none yet");
    advance(2);
    await checked;
    expect(answer).toEqual({ kind: "busy" }); // the last write's failure: the probe did not change it
    release();
    await eventually(async () => (await writes.check(probe)) === undefined, { what: "the probe's success" });
  });

  it("believes a probe until real writes fail after it, then no probe for 10 s, twice as long each time, until a real write succeeds", async () => {
    const { writes, advance } = health();
    let probes = 0;
    const probe = async () => void probes++;
    const full = () => writes.begin()(new StoreError("full", "disk full"));
    full();
    expect(await writes.check(probe)).toBeUndefined();
    // The probe said writes succeed; a real one says otherwise.
    full();
    expect(await writes.check(probe)).toEqual({ kind: "full", probeHeldMs: 10_000 });
    // Nor does another small write (webhook bookkeeping) count while probes are distrusted.
    writes.begin("probe")();
    advance(9_999);
    expect(await writes.check(probe)).toEqual({ kind: "full", probeHeldMs: 1 });
    expect(probes).toBe(1);
    advance(1);
    expect(await writes.check(probe)).toBeUndefined();
    full();
    expect(await writes.check(probe)).toEqual({ kind: "full", probeHeldMs: 20_000 });
    advance(20_000);
    expect(await writes.check(probe)).toBeUndefined();
    expect(probes).toBe(3);
    // A real write's success is the proof: probes are believed at once again.
    writes.begin()();
    full();
    expect(await writes.check(probe)).toBeUndefined();
    full();
    expect(writes.problem()).toEqual({ kind: "full", probeHeldMs: 10_000 });
  });

  it("distrusts probes for at most 5 minutes", async () => {
    const { writes, advance } = health();
    const full = () => writes.begin()(new StoreError("full", "disk full"));
    full();
    for (let round = 0; round < 8; round++) {
      advance(300_000);
      expect(await writes.check(async () => {})).toBeUndefined();
      full();
    }
    expect(writes.problem()).toEqual({ kind: "full", probeHeldMs: 300_000 });
  });
});
