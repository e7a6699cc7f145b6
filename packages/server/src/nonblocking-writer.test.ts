import { execFileSync } from "node:child_process";
import { closeSync, constants, mkdtempSync, openSync, readSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { eventually } from "@plantstore/test-support/eventually";
import { afterAll, describe, expect, it } from "vitest";

import { NonBlockingWriter } from "./nonblocking-writer.ts";

/** A real pipe (a FIFO, ~64 KB), both ends non-blocking, in this process. */
function pipe(): { reader: number; writer: number } {
  const dir = mkdtempSync(join(tmpdir(), "plantstore-nonblocking-"));
  const fifo = join(dir, "pipe");
  execFileSync("mkfifo", [fifo]);
  const reader = openSync(fifo, constants.O_RDONLY | constants.O_NONBLOCK);
  const writer = openSync(fifo, constants.O_WRONLY | constants.O_NONBLOCK);
  rmSync(dir, { recursive: true, force: true });
  opened.push({ reader, writer });
  return { reader, writer };
}

// A writer left with bytes waiting keeps trying its descriptor every few milliseconds: were that
// closed first, its number could be reused by another test's file or socket in this process and
// the writer would write there. So the read ends close first (the next try meets EPIPE and the
// writer stops, settling its flush), and the write ends only once every writer has settled.
const opened: Array<{ reader: number; writer: number }> = [];
const writers: NonBlockingWriter[] = [];
afterAll(async () => {
  for (const { reader } of opened) if (reader >= 0) closeSync(reader);
  await Promise.all(writers.splice(0).map((out) => new Promise<void>((settled) => out.flush(settled))));
  for (const { writer } of opened.splice(0)) closeSync(writer);
});

/** Closes a pipe's read end now (and not again after the tests: its number may be reused by then). */
function closeReader(fd: number): void {
  closeSync(fd);
  for (const entry of opened) if (entry.reader === fd) entry.reader = -1;
}

/** A writer whose bound is far above what these tests send, unless told. */
function writerOn(fd: number, maxWaitingBytes = 64 * 1024 * 1024): NonBlockingWriter {
  const out = new NonBlockingWriter(fd, {
    maxWaitingBytes,
    droppedNotice: (bytes) => Buffer.from(`dropped ${bytes}\n`),
  });
  writers.push(out);
  return out;
}

/** Block `i` of `size` bytes, each one different, so order and loss both show. */
const block = (i: number, size = 4_000) => Buffer.alloc(size, `${i.toString().padStart(6, "0")}|`);

/** Reads what the pipe holds (none when it is empty). */
function readAvailable(fd: number): Buffer {
  const chunks: Buffer[] = [];
  const chunk = Buffer.alloc(65_536);
  for (;;) {
    let n: number;
    try {
      n = readSync(fd, chunk);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "EAGAIN") break;
      throw error;
    }
    if (n === 0) break;
    chunks.push(Buffer.from(chunk.subarray(0, n)));
  }
  return Buffer.concat(chunks);
}

describe("NonBlockingWriter", () => {
  it("keeps what a full pipe has no room for, in order, and writes it soon after the reader reads", async () => {
    const { reader, writer } = pipe();
    const out = writerOn(writer);
    const sent = Array.from({ length: 1_000 }, (_, i) => block(i)); // 4 MB through a 64 KB pipe
    const kept = sent.map((bytes) => !out.write(bytes)).filter(Boolean).length;
    expect(kept).toBeGreaterThan(900);

    // A reader that keeps reading: what waits follows within milliseconds of each read, not at
    // SonicBoom's 100 ms (which would take over 6 s for these 4 MB).
    const started = performance.now();
    const received: Buffer[] = [];
    let total = 0;
    await eventually(
      () => {
        const got = readAvailable(reader);
        received.push(got);
        total += got.length;
        return total >= 4_000_000;
      },
      { what: () => `4 MB through the pipe (${total} bytes so far)`, intervalMs: 1 },
    );
    expect(Buffer.concat(received).equals(Buffer.concat(sent))).toBe(true);
    expect(performance.now() - started).toBeLessThan(3_000);
    let drained = false;
    out.flush(() => (drained = true));
    expect(drained).toBe(true);
  });

  it("writes whole blocks through a pipe with room, and says they may be reused", () => {
    const { reader, writer } = pipe();
    const out = writerOn(writer);
    expect(out.write(block(1))).toBe(true);
    expect(out.write(block(2))).toBe(true);
    expect(readAvailable(reader).equals(Buffer.concat([block(1), block(2)]))).toBe(true);
  });

  it("gives up waiting at exit after its deadline when the reader never reads", () => {
    const { writer } = pipe();
    const out = writerOn(writer);
    for (let i = 0; i < 100; i++) out.write(block(i));
    let flushed = false;
    out.flush(() => (flushed = true));
    expect(flushed).toBe(false);
    const started = performance.now();
    out.drainBeforeExit(200);
    const took = performance.now() - started;
    expect(took).toBeGreaterThanOrEqual(190);
    expect(took).toBeLessThan(2_000);
  });

  it("drops what follows once the reader is gone, without throwing", () => {
    const { reader, writer } = pipe();
    const out = writerOn(writer);
    closeReader(reader);
    expect(out.write(block(1))).toBe(true);
    expect(out.write(block(2))).toBe(true);
    let flushed = false;
    out.flush(() => (flushed = true));
    expect(flushed).toBe(true);
  });

  it("drops what would pass its bound while the reader is stuck, and says how much once it has caught up", async () => {
    const { reader, writer } = pipe();
    const out = writerOn(writer, 100_000);
    const sent = Array.from({ length: 1_000 }, (_, i) => block(i));
    for (const bytes of sent) out.write(bytes);

    // The notice comes last, after everything that waited: once it is there, nothing more will be.
    const received: Buffer[] = [];
    const text = await eventually(
      () => {
        received.push(readAvailable(reader));
        const sofar = Buffer.concat(received).toString("latin1");
        return /dropped \d+\n$/.test(sofar) && sofar;
      },
      { what: "the dropped-bytes notice after what waited", intervalMs: 1 },
    );
    const blocks = Math.floor(text.length / 4_000);
    // What the pipe held and what waited (at most the bound, plus the first to wait), whole and in
    // order, then the notice for all the rest.
    expect(blocks).toBeGreaterThan(25);
    expect(blocks * 4_000).toBeLessThan(65_536 + 100_000 + 4_000);
    expect(text.slice(0, blocks * 4_000)).toBe(Buffer.concat(sent.slice(0, blocks)).toString("latin1"));
    expect(text.slice(blocks * 4_000)).toBe(`dropped ${(1_000 - blocks) * 4_000}\n`);
  });
});
