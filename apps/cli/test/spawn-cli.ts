import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";

import { eventually } from "@plantstore/test-support/eventually";

import type { CliResult } from "./run-cli.ts";

const BIN = fileURLToPath(new URL("../dist/bin.js", import.meta.url));

/** A CLI process that runs until told to stop (`plants watch`), read while it runs. */
export type RunningCli = {
  stdout(): string;
  stderr(): string;
  /** Waits until stdout holds at least `count` lines; returns them. */
  lines(count: number, timeoutMs?: number): Promise<string[]>;
  /** Waits until stderr matches. */
  stderrMatching(pattern: RegExp): Promise<string>;
  /** Sends `signal` and waits for the process to exit. */
  stop(signal?: NodeJS.Signals): Promise<CliResult>;
  /** Stops reading stdout, as `| head -n 1` does once it has its line. */
  closeStdout(): void;
  /** Waits for the process to exit by itself. */
  exited(): Promise<CliResult>;
  [Symbol.asyncDispose](): Promise<void>;
};

/** `node dist/bin.js <args>` with the caller's PLANTSTORE_* variables removed, plus `env`. */
export function spawnCli(args: readonly string[], env: Record<string, string> = {}): RunningCli {
  if (!existsSync(BIN)) throw new Error(`${BIN} is missing: run \`pnpm --filter @plantstore/cli build\` first`);
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("PLANTSTORE_")));
  const child: ChildProcess = spawn(process.execPath, [BIN, ...args], { env: { ...inherited, ...env }, stdio: "pipe" });
  let stdout = "";
  let stderr = "";
  child.stdout!.setEncoding("utf8").on("data", (chunk: string) => (stdout += chunk));
  child.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
  const closed = once(child, "close").then(([code]) => ({ code: code as number | null, stdout, stderr }));
  const lines = () => stdout.split("\n").slice(0, -1);
  return {
    stdout: () => stdout,
    stderr: () => stderr,
    lines: (count, timeoutMs) =>
      eventually(() => lines().length >= count && lines(), {
        what: () => `${count} lines on stdout (${lines().length} so far; stderr: ${stderr})`,
        ...(timeoutMs === undefined ? {} : { timeoutMs }),
      }),
    stderrMatching: (pattern) =>
      eventually(() => pattern.test(stderr) && stderr, { what: () => `stderr matching ${pattern} (now: ${stderr})` }),
    async stop(signal = "SIGINT") {
      child.kill(signal);
      return closed;
    },
    closeStdout: () => child.stdout!.destroy(),
    exited: () => closed,
    async [Symbol.asyncDispose]() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
      await closed;
    },
  };
}
