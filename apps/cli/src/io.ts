import type { CliEnv } from "./config.ts";

/** Everything a command touches outside itself, passed in so the program never reaches for globals. */
export type Io = {
  env: CliEnv;
  stdout(text: string): void;
  stderr(text: string): void;
  /**
   * Calls `listener` on the first SIGINT or SIGTERM until the returned function is called; the
   * default handling (ending the process) stays for every other command and for a second signal.
   */
  onInterrupt(listener: () => void): () => void;
};

/** 0 success, 1 the service refused or could not be reached, 2 bad usage (nothing was sent). */
export const ExitCode = { ok: 0, failure: 1, usage: 2 } as const;
