import { type LevelWithSilent, type Logger, pino } from "pino";

import { serializeError } from "./log-errors.ts";
import { stdoutBlocks } from "./stdout-blocks.ts";

/** pino's numeric level of `warn`: warnings and errors are written at once, not held for a full block. */
const WARN = 40;

/**
 * Structured JSON logs on stdout. Authorization headers and tokens are never passed to the logger;
 * the redaction below is a second line of defence.
 *
 * Writes never wait for the log's reader, and are batched: a log line must not cost a write(2) on
 * the request path (stdout-blocks.ts). What is held is at most ~4 KB or 100 ms of info lines,
 * written out when the process exits (also on SIGTERM/SIGINT, which end the server through a
 * normal exit; at most 5 s are spent waiting for a reader that has no room). A SIGKILL or a power
 * cut can lose those last info lines, and never anything stored: a 200 waits for the database, not
 * for the log. A warning or an error is written at once, or, when the log's reader is behind, as
 * soon as it has caught up.
 */
export function createLogger(level: LevelWithSilent, destination?: NodeJS.WritableStream): Logger {
  const options = {
    level,
    base: { service: "plantstore" },
    redact: { paths: ["req.headers.authorization", "authorization", "token", "*.token"], censor: "[redacted]" },
    serializers: { err: serializeError },
  };
  if (destination !== undefined) return pino(options, destination);
  const stdout = stdoutBlocks(options.base);
  const hooks = {
    logMethod(this: Logger, args: Parameters<Logger["info"]>, method: Logger["info"], levelValue: number) {
      method.apply(this, args);
      if (levelValue >= WARN) stdout.flush();
    },
  };
  return pino({ ...options, hooks }, stdout);
}
