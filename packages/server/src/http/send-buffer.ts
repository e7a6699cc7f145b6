import type { Socket } from "node:net";

/** What the server can learn and set about a socket's kernel send buffer. */
export type KernelSendBuffer = {
  /** Caps how much of the socket's data the kernel holds to about `bytes`; false when it could not. */
  cap(socket: Socket, bytes: number): boolean;
  /**
   * Bytes the kernel holds for the socket that its peer has not acknowledged (Linux's SIOCOUTQ),
   * or undefined where that cannot be told.
   */
  queued(socket: Socket): number | undefined;
};

// setsockopt(2)'s SOL_SOCKET and SO_SNDBUF, which differ between systems. Elsewhere (Windows)
// Node's sockets show no descriptor to set it on.
const SO_SNDBUF: Partial<Record<NodeJS.Platform, { level: number; option: number }>> = {
  linux: { level: 1, option: 7 },
  android: { level: 1, option: 7 },
  darwin: { level: 0xffff, option: 0x1001 },
  freebsd: { level: 0xffff, option: 0x1001 },
  openbsd: { level: 0xffff, option: 0x1001 },
};
// Linux's SIOCOUTQ (= TIOCOUTQ): unsent plus unacknowledged bytes of a TCP socket.
const SIOCOUTQ = 0x5411;

/**
 * The socket's file descriptor. Node has no public way to set or read a TCP socket's send buffer
 * (`dgram` has `setSendBufferSize`, `net` nothing), so both go through the descriptor its stream
 * handle keeps; send-buffer.test.ts fails if a Node upgrade moves it.
 */
function descriptorOf(socket: Socket): number | undefined {
  const fd = (socket as Socket & { _handle?: { fd?: unknown } | null })._handle?.fd;
  return typeof fd === "number" && fd >= 0 ? fd : undefined;
}

/**
 * setsockopt(2) and ioctl(2) through koffi (prebuilt for each platform, no compiler at install),
 * from libc as the process already has it. Resolves why not when the buffer cannot be capped here:
 * the caller then bounds what it holds itself, without the kernel's share.
 */
export async function loadKernelSendBuffer(): Promise<KernelSendBuffer | { unavailable: string }> {
  const constants = SO_SNDBUF[process.platform];
  if (constants === undefined) return { unavailable: `no SO_SNDBUF on ${process.platform}` };
  let setsockopt: (fd: number, level: number, option: number, value: number[], length: number) => number;
  let ioctl: ((fd: number, request: number, value: number[]) => number) | undefined;
  try {
    const { default: koffi } = await import("koffi");
    const libc = koffi.load(null);
    setsockopt = libc.func("int setsockopt(int fd, int level, int optname, const int *optval, uint32_t optlen)");
    if (process.platform === "linux" || process.platform === "android") {
      ioctl = libc.func("int ioctl(int fd, unsigned long request, _Out_ int *value)");
    }
  } catch (error) {
    return { unavailable: error instanceof Error ? error.message : String(error) };
  }
  // Linux books twice what it is asked for (its bookkeeping counts too) and reports that.
  const divisor = process.platform === "linux" || process.platform === "android" ? 2 : 1;
  return {
    cap(socket, bytes) {
      const fd = descriptorOf(socket);
      if (fd === undefined) return false;
      return setsockopt(fd, constants.level, constants.option, [Math.max(1, Math.floor(bytes / divisor))], 4) === 0;
    },
    queued(socket) {
      const fd = descriptorOf(socket);
      if (ioctl === undefined || fd === undefined) return undefined;
      const value = [0];
      return ioctl(fd, SIOCOUTQ, value) === 0 ? value[0] : undefined;
    },
  };
}
