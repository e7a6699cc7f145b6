import { describe, expect, it } from "vitest";

import { TeardownStack } from "./teardown-stack.ts";

describe("TeardownStack", () => {
  it("closes in reverse order of registration, waiting for each close", async () => {
    const closed: string[] = [];
    const stack = new TeardownStack();
    stack.defer(() => void closed.push("store"));
    stack.defer(async () => {
      await Promise.resolve();
      closed.push("tokens");
    });
    stack.defer(() => void closed.push("redis"));
    await stack.disposeAsync();
    expect(closed).toEqual(["redis", "tokens", "store"]);
  });

  it("runs every close when one fails, then rejects with that failure itself", async () => {
    const closed: string[] = [];
    const failure = new Error("tokens failed to flush");
    const stack = new TeardownStack();
    stack.defer(() => void closed.push("store"));
    stack.defer(() => Promise.reject(failure));
    stack.defer(() => void closed.push("redis"));
    await expect(stack.disposeAsync()).rejects.toBe(failure);
    expect(closed).toEqual(["redis", "store"]);
  });

  it("reports several failures together, in the order they happened", async () => {
    const stack = new TeardownStack();
    stack.defer(() => {
      throw new Error("first opened");
    });
    stack.defer(() => {
      throw new Error("last opened");
    });
    const rejection = await stack.disposeAsync().then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(rejection).toBeInstanceOf(AggregateError);
    expect((rejection as AggregateError).errors.map((e: Error) => e.message)).toEqual(["last opened", "first opened"]);
  });

  it("closes once however often it is asked, and refuses registrations after", async () => {
    let closes = 0;
    const stack = new TeardownStack();
    stack.defer(() => void closes++);
    const first = stack.disposeAsync();
    expect(stack[Symbol.asyncDispose]()).toBe(first);
    await first;
    expect(closes).toBe(1);
    expect(() => stack.defer(() => undefined)).toThrow(/already run/);
  });
});
