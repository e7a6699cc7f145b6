import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { readFileSync } from "node:fs";
import { type AddressInfo, createServer } from "node:net";

import { type CpuPlan, pinnedCommand, processTree } from "./cpu.ts";

/** A server under test, running as a child process we can measure and stop. */
export type Target = {
  name: string;
  url: string;
  pid: number;
  /** The CPUs it is pinned to, or null when it runs unpinned. */
  cpus: number[] | null;
  /** Throws if the process has died since it started (its output tail in the message). */
  assertAlive(): void;
  stop(): Promise<void>;
};

const START_TIMEOUT_MS = 15_000;
const STOP_TIMEOUT_MS = 5_000;
const TAIL_CHARS = 4_000;

/**
 * Starts `node <script> ...args` and waits for the JSON log line carrying `"url":"http://..."`,
 * which both our server (at info level) and the baseline print once listening. Asking for port 0
 * and reading the line back avoids racing another process for a "free" port.
 */
export type StartOptions = {
  /** 0 (the default) lets the target pick; a server with several workers needs a fixed one. */
  port?: number;
  /** How many "url" lines mean ready: one per worker process. */
  listeners?: number;
  /** Pin to these CPUs (with the plan's taskset); unset runs unpinned. */
  cpus?: { plan: CpuPlan; cpus: number[] };
  /** Extra node flags, e.g. --cpu-prof. */
  nodeFlags?: string[];
};

export async function startTarget(
  name: string,
  args: string[],
  env: Record<string, string>,
  { port = 0, listeners = 1, cpus, nodeFlags = [] }: StartOptions = {},
): Promise<Target> {
  const nodeArgs = [...nodeFlags, ...args];
  const [command, commandArgs] =
    cpus === undefined ? [process.execPath, nodeArgs] : pinnedCommand(cpus.plan, cpus.cpus, process.execPath, nodeArgs);
  const child = spawn(command, commandArgs, {
    env: { ...process.env, PORT: String(port), HOST: "127.0.0.1", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  // Keep reading both pipes for the whole run: a child blocked on a full pipe would stall mid-benchmark.
  let tail = "";
  const record = (chunk: Buffer) => (tail = (tail + chunk.toString("utf8")).slice(-TAIL_CHARS));
  child.stdout.on("data", record);
  child.stderr.on("data", record);
  let exited: string | undefined;
  child.on("exit", (code, signal) => (exited = `exited with ${signal ?? code}`));

  // Start-up output is kept whole (unlike the tail) so no "url" line is lost at a chunk boundary.
  let startup = "";
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => fail(`fewer than ${listeners} "url" lines within ${START_TIMEOUT_MS} ms`),
      START_TIMEOUT_MS,
    );
    const onExit = () => fail(exited ?? "exited");
    const onError = (error: Error) => fail(error.message);
    const onData = (chunk: Buffer) => {
      startup += chunk.toString("utf8");
      const urls = [...startup.matchAll(/"url":"(http:\/\/[^"]+)"/g)].map((m) => m[1]!);
      if (urls.length < listeners) return;
      settle();
      resolve(urls[0]!);
    };
    const settle = () => {
      clearTimeout(timer);
      child.stdout.off("data", onData);
      child.off("exit", onExit);
      child.off("error", onError);
    };
    const fail = (why: string) => {
      settle();
      child.kill("SIGKILL");
      reject(new Error(`${name}: ${why}; output:\n${tail}`));
    };
    child.stdout.on("data", onData);
    child.once("exit", onExit);
    child.once("error", onError);
  });

  return {
    name,
    url,
    pid: child.pid!,
    cpus: command === "taskset" && cpus !== undefined ? cpus.cpus : null,
    assertAlive() {
      if (exited !== undefined) throw new Error(`${name} ${exited} during the run; output:\n${tail}`);
    },
    stop: () => stopChild(child),
  };
}

async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exit = once(child, "exit");
  child.kill("SIGTERM");
  const timer = setTimeout(() => child.kill("SIGKILL"), STOP_TIMEOUT_MS);
  await exit;
  clearTimeout(timer);
}

/**
 * Resident set size in bytes, summed over the process tree: the current one, and the sum of each
 * process's own peak (VmHWM, so an upper bound for the tree). 0 where /proc is missing.
 */
export function readRss(pid: number): { rss: number; peak: number } {
  let rss = 0;
  let peak = 0;
  let tree: number[];
  try {
    tree = processTree(pid);
  } catch {
    return { rss, peak };
  }
  for (const member of tree) {
    try {
      const status = readFileSync(`/proc/${member}/status`, "utf8");
      const kb = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)?.[1] ?? 0) * 1024;
      rss += kb("VmRSS");
      peak += kb("VmHWM");
    } catch {
      // Same race as above.
    }
  }
  return { rss, peak };
}

/** Samples RSS while load runs; VmHWM alone would also count start-up, the sampled maximum only load. */
export function sampleRss(pid: number, intervalMs = 200): { stop(): { maxRss: number; peak: number } } {
  let maxRss = readRss(pid).rss;
  const timer = setInterval(() => (maxRss = Math.max(maxRss, readRss(pid).rss)), intervalMs);
  // A forgotten sampler must not keep the harness alive after the run.
  timer.unref();
  return {
    stop() {
      clearInterval(timer);
      const last = readRss(pid);
      return { maxRss: Math.max(maxRss, last.rss), peak: last.peak };
    },
  };
}

/** A port free right now. Another process could take it before the server binds; rare on a bench machine. */
export async function freePort(): Promise<number> {
  const server = createServer().listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}
