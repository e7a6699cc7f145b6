import { type LevelWithSilent, type Logger, pino } from "pino";

/**
 * Lines are written to stdout in blocks of about this many bytes (some 15 access lines) rather
 * than one write(2) each. No block passes PIPE_BUF (lines that arrive while a block is being
 * written start the next one rather than grow it past that), so each is one atomic write to a
 * pipe; only a single line longer than PIPE_BUF goes out alone, over it.
 * Measured (bench/README.md): one write per line was 12-20% of the server's CPU per request, the
 * largest single entry of its profile. Larger blocks, tried and dropped: each write's hand-off to
 * libuv's thread pool costs more than its bytes (pino's access lines through a pipe, pinned: 5.1 µs
 * of CPU per line in 4 KB blocks, 2.2 in 64 KB), but in `pnpm bench` 64 KB blocks gained nothing
 * (reads 0.99x, creations 1.00-1.04x against 4 KB, side by side) and the create path's p99 grew
 * with the block (12.4 ms at 4 KB, 17.2 at 16 KB, 22.2 at 64 KB, one run side by side).
 */
const LOG_BLOCK_BYTES = 4000;
/** The most one write(2) carries: PIPE_BUF, the size up to which a write to a pipe is atomic. */
const PIPE_BUF = 4096;
/** A block that is not full goes out after this long anyway, so a quiet server's lines still appear. */
const LOG_FLUSH_MS = 100;
/** pino's numeric level of `warn`: warnings and errors are flushed at once, not held for a full block. */
const WARN = 40;

/**
 * Structured JSON logs on stdout. Authorization headers and tokens are never passed to the
 * logger; the redaction below is a second line of defence.
 *
 * Writes are asynchronous and batched: a log line must not cost a write(2) on the request path.
 * What is held is at most ~4 KB or 100 ms of info lines; pino writes it out when the process exits
 * (also on SIGTERM/SIGINT, which end the server through a normal exit). A SIGKILL or a power cut
 * can lose those last info lines, and never anything stored: a 200 waits for the database, not for
 * the log. A warning or an error is written at once, or, when a block is being written at that
 * moment, with the next one (SonicBoom defers a flush behind a write in progress), within 100 ms.
 */
export function createLogger(level: LevelWithSilent, destination?: NodeJS.WritableStream): Logger {
  const options = {
    level,
    base: { service: "plantstore" },
    redact: { paths: ["req.headers.authorization", "authorization", "token", "*.token"], censor: "[redacted]" },
  };
  if (destination !== undefined) return pino(options, destination);
  // Buffer mode: SonicBoom's default (text) mode measures the whole pending block with
  // Buffer.byteLength on every line it appends; in buffer mode it adds up each line's length.
  // Measured (pino with the access line's fields, 200k lines to /dev/null, one core): 2.8-3.5 µs
  // of CPU per line in text mode against 1.7-1.8 µs. pino registers its exit flush on `stdout`
  // itself, so nothing waits in `lines`: each line is handed over as it is written.
  const stdout = pino.destination({
    dest: 1,
    sync: false,
    minLength: LOG_BLOCK_BYTES,
    maxWrite: PIPE_BUF,
    periodicFlush: LOG_FLUSH_MS,
    contentMode: "buffer",
  });
  const lines = {
    // SonicBoom's types describe only its text mode; in buffer mode write() takes a Buffer.
    write: (line: string) => stdout.write(Buffer.from(line) as unknown as string),
    flush: (done?: (error?: Error) => void) => stdout.flush(done),
  };
  const hooks = {
    logMethod(this: Logger, args: Parameters<Logger["info"]>, method: Logger["info"], levelValue: number) {
      method.apply(this, args);
      if (levelValue >= WARN) stdout.flush();
    },
  };
  return pino({ ...options, hooks }, lines);
}
