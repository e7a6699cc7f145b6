import cluster from "node:cluster";

import type { Logger } from "pino";

// Past the workers' own shutdown deadline, the primary gives them this long to exit on their own.
const PRIMARY_MARGIN_MS = 2_000;
// What a worker tells the primary once its own SIGTERM/SIGINT handlers are installed.
const SIGNALS_HANDLED = "plantstore:signals-handled";

/**
 * Runs `workers` copies of the HTTP server behind one port with node:cluster, so both cores
 * serve. SQLite stays correct with several processes: WAL lets them read concurrently and its
 * file lock serialises their commits (each process still groups its own). On PostgreSQL each
 * worker is one more stateless instance with its own connection pool. The primary only
 * supervises: it restarts a worker that dies, and on SIGTERM/SIGINT passes the signal on, waits
 * for every worker's graceful stop and exits 0 only if each of them did (1 otherwise, or when
 * they are not done shortly after `shutdownTimeoutMs`).
 *
 * A worker gets the signal only once it said it handles signals (`reportSignalsHandled`): one still
 * loading its modules would die by the signal's default action, which the primary would then report
 * as a worker that did not stop cleanly. It gets the signal as soon as it says so.
 */
export function superviseWorkers(workers: number, logger: Logger, shutdownTimeoutMs: number): void {
  let stopping: NodeJS.Signals | undefined;
  let failed = false;
  const handlingSignals = new Set<number>();
  const fork = () => cluster.fork();
  for (let i = 0; i < workers; i++) fork();
  const alive = () => Object.values(cluster.workers ?? {}).filter((w) => w !== undefined);
  cluster.on("message", (worker, message) => {
    if (message !== SIGNALS_HANDLED) return;
    handlingSignals.add(worker.id);
    if (stopping !== undefined) worker.process.kill(stopping);
  });
  cluster.on("exit", (worker, code, signal) => {
    handlingSignals.delete(worker.id);
    if (stopping !== undefined) {
      if (code !== 0) {
        failed = true;
        logger.error({ pid: worker.process.pid, code, signal }, "worker did not stop cleanly");
      }
      if (alive().length === 0) process.exit(failed ? 1 : 0);
      return;
    }
    logger.error({ pid: worker.process.pid, code, signal }, "worker died; starting another");
    fork();
  });
  const stop = (signal: NodeJS.Signals) => {
    if (stopping !== undefined) return;
    stopping = signal;
    logger.info({ signal, deadlineMs: shutdownTimeoutMs }, "stopping workers");
    const remaining = alive();
    if (remaining.length === 0) process.exit(0);
    for (const worker of remaining) if (handlingSignals.has(worker.id)) worker.process.kill(signal);
    setTimeout(() => {
      logger.error({ workers: alive().length }, "workers did not stop in time; killing them");
      for (const worker of alive()) worker.process.kill("SIGKILL");
      process.exit(1);
    }, shutdownTimeoutMs + PRIMARY_MARGIN_MS).unref();
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
  logger.info({ workers }, "workers starting");
}

/** In a worker, once its SIGTERM/SIGINT handlers are installed: from now on the primary may pass signals on. */
export function reportSignalsHandled(): void {
  if (cluster.isWorker) process.send?.(SIGNALS_HANDLED);
}

export const isWorkerProcess = () => cluster.isWorker;
