import type { Logger } from "pino";

import { type Clock, systemClock } from "../clock.ts";
import type { ChangeRetention } from "../storage/change-rows.ts";

export type ChangePrunerOptions = {
  store: ChangeRetention;
  /** How long a change stays in the log (PLANTSTORE_CHANGES_RETENTION). */
  retentionMs: number;
  logger: Logger;
  clock?: Clock | undefined;
  /** Between two prunings; default a tenth of the retention, at most a minute. */
  everyMs?: number;
  /** Changes one statement deletes at most, so a pruning never holds the writer for long. */
  chunk?: number;
};

const DEFAULT_CHUNK = 5_000;

/**
 * Deletes changes older than the retention, every `everyMs`, a chunk at a time until none is left.
 * Every instance prunes: the deletes are idempotent, and a change log needs no leader. A failure
 * (the database away) is logged and tried again at the next round: an unpruned change costs space,
 * never correctness.
 */
export function startChangePruner(options: ChangePrunerOptions): { stop(): Promise<void> } {
  const clock = options.clock ?? systemClock;
  const everyMs = options.everyMs ?? Math.max(1_000, Math.min(60_000, Math.floor(options.retentionMs / 10)));
  const chunk = options.chunk ?? DEFAULT_CHUNK;
  let stopped = false;
  let running: Promise<void> | undefined;
  let cancel: () => void = () => undefined;

  const prune = async () => {
    try {
      const before = clock.now() - options.retentionMs;
      while (!stopped && (await options.store.pruneChanges(before, chunk)) === chunk);
    } catch (error) {
      options.logger.warn({ err: error }, "pruning the change log failed; trying again at the next round");
    }
  };
  const schedule = () => {
    cancel = clock.setTimer(() => {
      running = prune().finally(() => {
        running = undefined;
        if (!stopped) schedule();
      });
      return running;
    }, everyMs);
  };
  schedule();
  return {
    async stop() {
      stopped = true;
      cancel();
      await running;
    },
  };
}
