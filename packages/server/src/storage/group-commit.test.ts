import { describe, expect, it } from "vitest";

import { type CommittedBatch, GroupCommit } from "./group-commit.ts";

/**
 * The batching rule alone, with a commit the test finishes by hand: which writes travel together
 * and when a batch may start beside one in flight. What a real commit does is the store contract's
 * (test/storage/store-contract.test.ts), run against both databases.
 */
function harness(options: { maxBatchesInFlight: number; minOverlappingBatch?: number }) {
  const started: number[][] = [];
  const finish: Array<() => void> = [];
  const group = new GroupCommit<number, number>({
    maxBatchSize: 100,
    ...options,
    commit: (ops) =>
      new Promise<CommittedBatch<number>>((resolve) => {
        started.push(ops);
        finish.push(() => resolve({ results: ops, commitMs: 0 }));
      }),
  });
  const submit = (from: number, count: number) => Array.from({ length: count }, (_, i) => group.submit(from + i));
  return { group, started, finish, submit };
}

const turn = () => new Promise((resolve) => setImmediate(resolve));

describe("GroupCommit", () => {
  it("starts a batch beside the one in flight as soon as a write waits, by default", async () => {
    const { started, finish, submit } = harness({ maxBatchesInFlight: 2 });
    const first = submit(0, 3);
    await turn();
    const second = submit(3, 2);
    await turn();
    expect(started).toEqual([
      [0, 1, 2],
      [3, 4],
    ]);
    finish.forEach((done) => done());
    expect(await Promise.all([...first, ...second])).toEqual([0, 1, 2, 3, 4]);
  });

  it("keeps a few waiting writes for the next batch rather than start a small one beside the commit in flight", async () => {
    const { started, finish, submit } = harness({ maxBatchesInFlight: 4, minOverlappingBatch: 16 });
    const first = submit(0, 3);
    await turn();
    const waiting = submit(3, 15);
    await turn();
    // 15 < 16: they wait for the first commit, then go as one batch.
    expect(started).toEqual([[0, 1, 2]]);
    finish[0]!();
    await Promise.all(first);
    await turn();
    expect(started.map((batch) => batch.length)).toEqual([3, 15]);
    finish[1]!();
    expect(await Promise.all(waiting)).toEqual(Array.from({ length: 15 }, (_, i) => 3 + i));
  });

  it("starts a parallel batch once the queue reaches minOverlappingBatch", async () => {
    const { started, finish, submit } = harness({ maxBatchesInFlight: 4, minOverlappingBatch: 16 });
    const first = submit(0, 1);
    await turn();
    const many = submit(1, 16);
    await turn();
    expect(started.map((batch) => batch.length)).toEqual([1, 16]);
    finish.forEach((done) => done());
    await Promise.all([...first, ...many]);
  });

  it("settles what waited below the threshold when close() drains", async () => {
    const { group, started, finish, submit } = harness({ maxBatchesInFlight: 4, minOverlappingBatch: 16 });
    const first = submit(0, 1);
    await turn();
    const rest = submit(1, 2);
    const closed = group.close();
    finish[0]!();
    await Promise.all(first);
    await turn();
    expect(started.map((batch) => batch.length)).toEqual([1, 2]);
    finish[1]!();
    await Promise.all(rest);
    await closed;
  });

  it("failQueued rejects the writes not yet sent and leaves the batch in flight its own outcome", async () => {
    const { group, started, finish, submit } = harness({ maxBatchesInFlight: 1 });
    const sent = submit(0, 2);
    await turn();
    const queued = submit(2, 2);
    await turn();
    group.failQueued(new Error("the database is not reachable"));
    for (const write of queued) await expect(write).rejects.toThrow("not reachable");
    finish[0]!();
    expect(await Promise.all(sent)).toEqual([0, 1]);
    await turn();
    expect(started).toEqual([[0, 1]]);
  });
});
