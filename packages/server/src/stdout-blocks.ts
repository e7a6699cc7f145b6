import { constants, fstatSync, openSync, readFileSync } from "node:fs";

import { pino } from "pino";

import { NonBlockingWriter } from "./nonblocking-writer.ts";

/**
 * Lines are written to stdout in blocks of about this many bytes (some 25 access lines) rather
 * than one write(2) each. No block passes PIPE_BUF, so each is one atomic write to a pipe; only a
 * single line longer than a block goes out alone, over it.
 * Measured (bench/README.md): one write per line was 12-20% of the server's CPU per request, the
 * largest single entry of its profile. Larger blocks, tried and dropped: in `pnpm bench` 64 KB
 * blocks gained nothing (reads 0.99x, creations 1.00-1.04x against 4 KB, side by side) and the
 * create path's p99 grew with the block (12.4 ms at 4 KB, 17.2 at 16 KB, 22.2 at 64 KB).
 */
const BLOCK_BYTES = 4000;
/** The most one write(2) carries: PIPE_BUF, the size up to which a write to a pipe is atomic. */
const PIPE_BUF = 4096;
/** A block that is not full goes out after this long anyway, so a quiet server's lines still appear. */
const FLUSH_MS = 100;

export type LineSink = {
  write(line: string): boolean;
  /** Hands the block being filled to the writer now (a warning or an error is not held back). */
  flush(done?: (error?: Error) => void): void;
};

/**
 * A descriptor of stdout that never blocks a write, where one can be had without changing how
 * anyone else writes to it; else undefined. Only on Linux:
 * - a pipe or a terminal (or /dev/null) is opened again through /proc, as a description of our
 *   own in non-blocking mode: a full pipe answers EAGAIN to us and nothing changes for whoever
 *   else writes to it (the shell, other processes);
 * - a socket (a Node parent's `stdio: "pipe"`, journald) cannot be opened again. Node's own
 *   `process.stdout` puts it in non-blocking mode (libuv's `uv_pipe_open`, as in any Node program
 *   that writes to stdout), and that is checked in /proc before it is relied on;
 * - a regular file is left to the asynchronous writer: a write to it does not wait for a reader,
 *   but may wait for the disk.
 */
function nonBlockingStdout(): number | undefined {
  if (process.platform !== "linux") return undefined;
  try {
    const stdout = fstatSync(1);
    if (stdout.isFIFO() || stdout.isCharacterDevice()) {
      return openSync("/proc/self/fd/1", constants.O_WRONLY | constants.O_NONBLOCK);
    }
    if (stdout.isSocket()) {
      void process.stdout;
      const flags = /^flags:\s*([0-7]+)$/m.exec(readFileSync("/proc/self/fdinfo/1", "utf8"))?.[1];
      return flags !== undefined && (Number.parseInt(flags, 8) & constants.O_NONBLOCK) !== 0 ? 1 : undefined;
    }
  } catch {
    // No /proc, or a pipe whose reader is gone (ENXIO): the asynchronous writer it is.
  }
  return undefined;
}

/** How long an exiting process waits for a log reader that has no room: a stuck one cannot hold a shutdown. */
const EXIT_DRAIN_MS = 5_000;
/**
 * The most log that waits for a reader that has no room: ~4 s of a busy server's lines (3.9 MB/s
 * at 23k requests/s). Past it, lines are dropped and counted rather than held in memory (as
 * Docker's non-blocking log mode does), and a warning says how many bytes once the reader is back.
 */
const MAX_WAITING_BYTES = 16 * 1024 * 1024;

/** Where full blocks go. */
type BlockWriter = {
  /** True when the block may be reused: written whole (or dropped); false when the writer keeps it. */
  write(block: Buffer): boolean;
  /** Calls `done` once nothing given to the writer waits. */
  flush(done: (error?: Error) => void): void;
  /** At the process's exit, synchronously: writes what waits. */
  beforeExit(): void;
};

/** Blocks written from this thread with non-blocking write(2)s to `fd` (nonblocking-writer.ts). */
function inPlaceWriter(fd: number, base: Record<string, unknown>): BlockWriter {
  const writer = new NonBlockingWriter(fd, {
    maxWaitingBytes: MAX_WAITING_BYTES,
    droppedNotice: (droppedBytes) =>
      Buffer.from(
        `${JSON.stringify({
          level: pino.levels.values["warn"],
          time: Date.now(),
          ...base,
          droppedBytes,
          msg: "log lines dropped: stdout's reader fell behind",
        })}\n`,
      ),
  });
  return {
    write: (block) => writer.write(block),
    flush: (done) => writer.flush(() => done()),
    beforeExit: () => writer.drainBeforeExit(EXIT_DRAIN_MS),
  };
}

/** Blocks handed to SonicBoom, which writes them to stdout through libuv's thread pool. */
function threadPoolWriter(): BlockWriter {
  const boom = pino.destination({
    dest: 1,
    sync: false,
    maxWrite: PIPE_BUF,
    // SonicBoom's text mode measures its whole pending text on every write; blocks are Buffers.
    contentMode: "buffer",
  });
  return {
    write: (block) => {
      // SonicBoom's types describe only its text mode; in buffer mode write() takes a Buffer. It
      // keeps what it is given until written.
      boom.write(block as unknown as string);
      return false;
    },
    flush: (done) => boom.flush(done),
    // After pino's own exit hook for it (registered as it was made), synchronously as that one.
    beforeExit: () => boom.flushSync(),
  };
}

/**
 * Where stdout's lines go, one per process: every logger without a destination shares it, so one
 * block, one timer and one exit hook serve them all.
 *
 * Each line is copied into one preallocated block. A full block (or one 100 ms old, or one
 * holding a warning) is written at once with a non-blocking write(2) from this thread, when stdout
 * allows one (see nonBlockingStdout): what the reader has no room for waits, in order, and is
 * tried again every few milliseconds (nonblocking-writer.ts). Where it does not (a regular file,
 * other systems), blocks go to SonicBoom, which writes them through libuv's thread pool. Neither
 * way waits for a reader.
 *
 * Measured (bench/README.md, `GET /plants/{id}`, access lines to a socket): handing every block to
 * the thread pool cost ~4.5 µs of CPU per request on one pinned core, a tenth of a read (two
 * context switches per block); the non-blocking write in this thread costs a fraction of that.
 * Copying lines into one block also ends the line Buffers that waited for the block's write and
 * outlived two young collections.
 */
class StdoutBlocks implements LineSink {
  readonly #writer: BlockWriter;
  #block = Buffer.allocUnsafe(BLOCK_BYTES);
  #used = 0;
  #timer: NodeJS.Timeout | undefined;

  /** `base`: the fields every line of the loggers carries, for the line this sink writes itself. */
  constructor(base: Record<string, unknown>) {
    const direct = nonBlockingStdout();
    this.#writer = direct === undefined ? threadPoolWriter() : inPlaceWriter(direct, base);
    // The block being filled, then whatever still waits.
    process.on("exit", () => {
      this.#handOver();
      this.#writer.beforeExit();
    });
  }

  write(line: string): boolean {
    const room = BLOCK_BYTES - this.#used;
    // A UTF-16 unit is at most 3 bytes of UTF-8: most lines need no byte count.
    if (line.length * 3 > room) {
      const bytes = Buffer.byteLength(line);
      if (bytes > room) {
        this.#handOver();
        if (bytes > BLOCK_BYTES) {
          this.#writer.write(Buffer.from(line));
          return true;
        }
      }
    }
    if (this.#used === 0) this.#timer = setTimeout(() => this.#handOver(), FLUSH_MS).unref();
    this.#used += this.#block.write(line, this.#used);
    return true;
  }

  flush(done?: (error?: Error) => void): void {
    this.#handOver();
    this.#writer.flush((error) => done?.(error));
  }

  #handOver(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
    if (this.#used === 0) return;
    const used = this.#used;
    this.#used = 0;
    // The block is kept for the next lines only when it was written whole; a writer keeps what
    // it could not write yet.
    if (!this.#writer.write(this.#block.subarray(0, used))) this.#block = Buffer.allocUnsafe(BLOCK_BYTES);
  }
}

let shared: StdoutBlocks | undefined;

/** The process's one stdout sink, made on first use (with that caller's `base`). */
export function stdoutBlocks(base: Record<string, unknown>): LineSink {
  return (shared ??= new StdoutBlocks(base));
}
