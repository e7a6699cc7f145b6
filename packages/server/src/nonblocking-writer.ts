import { writeSync } from "node:fs";

/**
 * How soon bytes that met a full pipe are tried again. SonicBoom waits 100 ms, so after one
 * hiccup of the reader it carries at most a pipe's worth per 100 ms (~2 MB/s on a socket, 0.6 on
 * a FIFO), less than a busy server logs (3.9 MB/s at 23k requests/s), and never catches up:
 * measured with a reader pausing 300 ms each second, 201 MB of RSS after 10 s and a 16 s exit.
 * A try is one write(2) that fails at once, so trying often costs nothing that matters.
 */
const RETRY_MS = 2;
/** Sleeping between tries while the process exits, so the wait does not spin a core. */
const EXIT_RETRY_MS = 1;

const pause = new Int32Array(new SharedArrayBuffer(4));

export type NonBlockingWriterOptions = {
  /** The most that may wait for the reader; what would pass it is dropped. */
  maxWaitingBytes: number;
  /** What to write once the reader has caught up after `droppedBytes` were dropped. */
  droppedNotice: (droppedBytes: number) => Buffer;
};

/**
 * Writes to a descriptor in non-blocking mode from this thread, never waiting for its reader:
 * what the reader has no room for yet waits here, in order, and is tried again every few
 * milliseconds; later bytes queue behind it. What waits is bounded (`maxWaitingBytes`): past it,
 * new bytes are dropped and counted, and once the reader has caught up, `droppedNotice` says how
 * many, so a reader stuck for minutes costs lines, not the server's memory. A reader that is gone
 * (EPIPE), or any other failure to write, ends the writing: what is logged after that is dropped,
 * as pino does on EPIPE, rather than failing the server.
 */
export class NonBlockingWriter {
  readonly #fd: number;
  readonly #maxWaiting: number;
  readonly #droppedNotice: (droppedBytes: number) => Buffer;
  /** Bytes the reader had no room for, oldest first; the first may be partly written. */
  #waiting: Buffer[] = [];
  #waitingBytes = 0;
  #dropped = 0;
  #retry: NodeJS.Timeout | undefined;
  #broken = false;
  #whenDrained: Array<() => void> = [];

  constructor(fd: number, options: NonBlockingWriterOptions) {
    this.#fd = fd;
    this.#maxWaiting = options.maxWaitingBytes;
    this.#droppedNotice = options.droppedNotice;
  }

  /**
   * Writes `bytes` now, or keeps them to write later. True when the caller may reuse them: they
   * were written whole (or dropped); false when they are kept.
   */
  write(bytes: Buffer): boolean {
    if (this.#broken) return true;
    if (this.#waiting.length > 0) return !this.#wait(bytes);
    const written = this.#tryWrite(bytes);
    if (written === bytes.length || this.#broken) return true;
    this.#wait(bytes.subarray(written));
    this.#retryLater();
    return false;
  }

  /** Calls `done` once nothing waits (at once when nothing does). */
  flush(done: () => void): void {
    if (this.#waiting.length === 0) done();
    else this.#whenDrained.push(done);
  }

  /**
   * For the process's exit, when no timer will run again: writes what waits, sleeping between
   * tries, for at most `deadlineMs`. What a reader stalled that long has not taken is dropped, so
   * a stuck log reader cannot hold a shutdown forever.
   */
  drainBeforeExit(deadlineMs: number): void {
    const giveUpAt = performance.now() + deadlineMs;
    for (;;) {
      this.#drain();
      if (this.#waiting.length === 0 || performance.now() >= giveUpAt) return;
      Atomics.wait(pause, 0, 0, EXIT_RETRY_MS);
    }
  }

  /** Bytes written (0 when the reader has no room); on any other failure, none, and the writer is broken. */
  #tryWrite(bytes: Buffer): number {
    try {
      return writeSync(this.#fd, bytes);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EAGAIN") return 0;
      this.#broken = true;
      this.#waiting = [];
      this.#waitingBytes = 0;
      this.#settleFlushes();
      return 0;
    }
  }

  /** Keeps `bytes` for later, or drops them when that would pass the bound; true when kept. */
  #wait(bytes: Buffer): boolean {
    // The first bytes to wait are always kept (a single block is far below the bound).
    if (this.#waiting.length > 0 && this.#waitingBytes + bytes.length > this.#maxWaiting) {
      this.#dropped += bytes.length;
      return false;
    }
    this.#waiting.push(bytes);
    this.#waitingBytes += bytes.length;
    return true;
  }

  /** Writes what waits until the reader has no room again; then, once, what was dropped. */
  #drain(): void {
    while (this.#waiting.length > 0) {
      const head = this.#waiting[0]!;
      const written = this.#tryWrite(head);
      if (this.#broken) return;
      this.#waitingBytes -= written;
      if (written < head.length) {
        this.#waiting[0] = head.subarray(written);
        this.#retryLater();
        return;
      }
      this.#waiting.shift();
    }
    if (this.#dropped > 0) {
      const notice = this.#droppedNotice(this.#dropped);
      this.#dropped = 0;
      // Like any write: it may find the reader behind again, and wait.
      if (!this.write(notice)) return;
    }
    this.#settleFlushes();
  }

  #retryLater(): void {
    if (this.#retry !== undefined) return;
    // Unreferenced: the lines left at exit are written by drainBeforeExit.
    this.#retry = setTimeout(() => {
      this.#retry = undefined;
      this.#drain();
    }, RETRY_MS).unref();
  }

  #settleFlushes(): void {
    for (const done of this.#whenDrained.splice(0)) done();
  }
}
