/**
 * Whoever opens a resource registers its close here at once, so a start-up that fails half way
 * closes what it had opened and a normal stop goes through the very same path: in reverse order of
 * opening, each close run even when an earlier one failed.
 *
 * The shape of the standard `AsyncDisposableStack` (`defer`, `disposeAsync`), which only Node 24
 * has: the packages support Node ≥ 22.12. Unlike it, this reports several failures as one
 * AggregateError rather than nested SuppressedErrors (also missing from Node 22), and a single
 * failure as itself, so a caller sees the error it would have seen without the stack.
 */
export class TeardownStack implements AsyncDisposable {
  readonly #closes: Array<() => void | Promise<void>> = [];
  #disposing: Promise<void> | undefined;

  /** Runs `close` on disposal, before everything registered earlier. */
  defer(close: () => void | Promise<void>): void {
    if (this.#disposing !== undefined) throw new Error("the teardown has already run; nothing more can be registered");
    this.#closes.push(close);
  }

  /** Closes everything in reverse order; the same promise for every caller. */
  disposeAsync(): Promise<void> {
    return (this.#disposing ??= this.#run());
  }

  [Symbol.asyncDispose](): Promise<void> {
    return this.disposeAsync();
  }

  async #run(): Promise<void> {
    const failures: unknown[] = [];
    for (const close of this.#closes.reverse()) {
      try {
        await close();
      } catch (error) {
        failures.push(error);
      }
    }
    if (failures.length === 1) throw failures[0];
    if (failures.length > 1) throw new AggregateError(failures, `${failures.length} resources failed to close`);
  }
}
