import { once } from "node:events";
import { connect, createServer, type Socket } from "node:net";

import { afterEach, describe, expect, it } from "vitest";

import { type KernelSendBuffer, loadKernelSendBuffer } from "./send-buffer.ts";

const cleanups: Array<() => void> = [];
afterEach(() => {
  for (const cleanup of cleanups.splice(0).reverse()) cleanup();
});

/** The server's side of a loopback TCP connection, and the client's. */
async function connection(): Promise<{ accepted: Socket; client: Socket }> {
  const server = createServer();
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const accepted = once(server, "connection") as Promise<[Socket]>;
  const client = connect((server.address() as { port: number }).port, "127.0.0.1");
  const [socket] = await accepted;
  cleanups.push(() => {
    client.destroy();
    socket.destroy();
    server.close();
  });
  return { accepted: socket, client };
}

async function kernelSendBuffer(): Promise<KernelSendBuffer> {
  const loaded = await loadKernelSendBuffer();
  if ("unavailable" in loaded) throw new Error(`the send buffer cannot be capped here: ${loaded.unavailable}`);
  return loaded;
}

describe("the kernel send buffer of a TCP socket (Linux)", () => {
  it("is capped and read through the descriptor Node keeps on the socket's handle (a Node upgrade that moves it fails here)", async () => {
    const buffer = await kernelSendBuffer();
    const { accepted } = await connection();
    expect(buffer.cap(accepted, 16_384)).toBe(true);
    expect(buffer.queued(accepted)).toBe(0);
    // What a capped buffer holds, with a peer that never reads, is shown through HTTP by
    // test/plants/event-stream-limits.test.ts.
  });

  it("cannot be capped or read on a socket that has no descriptor any more", async () => {
    const buffer = await kernelSendBuffer();
    const { accepted } = await connection();
    accepted.destroy();
    expect(buffer.cap(accepted, 16_384)).toBe(false);
    expect(buffer.queued(accepted)).toBeUndefined();
  });
});
