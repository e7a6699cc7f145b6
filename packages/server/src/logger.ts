import { pino, type Logger, type LevelWithSilent } from "pino";

/**
 * Structured JSON logs on stdout. Authorization headers and tokens are never passed to the
 * logger; the redaction below is a second line of defence.
 */
export function createLogger(level: LevelWithSilent, destination?: NodeJS.WritableStream): Logger {
  const options = {
    level,
    base: { service: "plantstore" },
    redact: { paths: ["req.headers.authorization", "authorization", "token", "*.token"], censor: "[redacted]" },
  };
  // Asynchronous writes: a log line must not cost a blocking write(2) on the request path.
  // pino flushes what is pending when the process exits.
  return pino(options, destination ?? pino.destination({ dest: 1, sync: false }));
}
