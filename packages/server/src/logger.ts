import { type LevelWithSilent, type Logger, pino } from "pino";

/** The most one write(2) carries atomically to a pipe: PIPE_BUF. */
const PIPE_BUF = 4096;

/**
 * Lines are written to stdout in blocks rather than one write(2) each: one write per line was
 * 12-20% of the server's CPU per request, the largest single entry of its profile (bench/README.md).
 *
 * How large a block may be depends on who else writes to the same stdout:
 * - alone (one process, the default), blocks of up to 64 KB, the size of a Linux pipe's buffer.
 *   Each write goes through libuv's thread pool, and on the server's core that hand-off costs far
 *   more than the bytes: pino with the access line's fields, 400k lines through a pipe, server and
 *   reader pinned to a core each, took 5.1-7.1 µs of CPU per line in 4 KB blocks, 2.9-3.1 in
 *   16 KB, 2.5 in 32 KB and 2.2-2.3 in 64 KB (2.1-2.4 with synchronous writes, which would block
 *   the server whenever the log's reader falls behind);
 * - shared (PLANTSTORE_WORKERS > 1: the workers and the primary inherit one stdout), blocks of at
 *   most PIPE_BUF, so each is one atomic write and no process's block splits another's line.
 * Lines that arrive while a block is being written start the next one rather than grow it past
 * the bound; only a single line longer than the bound goes out alone, over it.
 */
export type LogOutput = { sharedStdout: boolean };

export function logBlockBytes({ sharedStdout }: LogOutput): { minLength: number; maxWrite: number } {
  const maxWrite = sharedStdout ? PIPE_BUF : 64 * 1024;
  // Room for one more line before the bound: a block goes out once it passes minLength.
  return { minLength: maxWrite - 512, maxWrite };
}

/** A block that is not full goes out after this long anyway, so a quiet server's lines still appear. */
const LOG_FLUSH_MS = 100;
/** pino's numeric level of `warn`: warnings and errors are flushed at once, not held for a full block. */
const WARN = 40;

/**
 * Structured JSON logs on stdout. Authorization headers and tokens are never passed to the
 * logger; the redaction below is a second line of defence.
 *
 * Writes are asynchronous and batched: a log line must not cost a write(2) on the request path.
 * What is held is at most one block (see logBlockBytes) or 100 ms of info lines, whichever is less;
 * pino writes it out when the process exits (also on SIGTERM/SIGINT, which end the server through
 * a normal exit). A SIGKILL or a power cut can lose those last info lines, and never anything stored: a 200 waits for the database, not for
 * the log. A warning or an error is written at once, or, when a block is being written at that
 * moment, with the next one (SonicBoom defers a flush behind a write in progress), within 100 ms.
 */
export function createLogger(
  level: LevelWithSilent,
  destination?: NodeJS.WritableStream,
  output: LogOutput = { sharedStdout: false },
): Logger {
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
    ...logBlockBytes(output),
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
