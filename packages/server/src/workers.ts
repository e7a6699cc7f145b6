import cluster from "node:cluster";
import type { Logger } from "pino";

/**
 * Runs `workers` copies of the HTTP server behind one port with node:cluster, so both cores
 * serve. SQLite stays correct with several processes: WAL lets them read concurrently and its
 * file lock serialises their commits (each process still groups its own). On PostgreSQL each
 * worker is one more stateless instance with its own connection pool. The primary only
 * supervises: it restarts a worker that dies and passes SIGTERM/SIGINT on for a clean stop.
 */
export function superviseWorkers(workers: number, logger: Logger): void {
  let stopping = false;
  const fork = () => cluster.fork();
  for (let i = 0; i < workers; i++) fork();
  cluster.on("exit", (worker, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
      return;
    }
    logger.error({ pid: worker.process.pid, code, signal }, "worker died; starting another");
    fork();
  });
  const stop = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "stopping workers");
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill(signal);
  };
  process.once("SIGTERM", () => stop("SIGTERM"));
  process.once("SIGINT", () => stop("SIGINT"));
}

export const isWorkerProcess = () => cluster.isWorker;
