import type { Socket } from "node:net";

import { sha256 } from "../auth/static-tokens.ts";

type Last = { token: string; digest: Buffer };

/** Per keep-alive connection: the token it presented last and that token's SHA-256. */
const lastToken = new WeakMap<Socket, Last>();

/**
 * Whether two strings are equal, in a time that depends on their lengths only, not on where they
 * first differ (as crypto.timingSafeEqual, without making a Buffer of each).
 */
function sameText(a: string, b: string): boolean {
  let difference = a.length ^ b.length;
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) difference |= a.charCodeAt(i) ^ b.charCodeAt(i);
  return difference === 0;
}

/**
 * The SHA-256 every authenticator compares, reused while a connection keeps presenting the same
 * token: a keep-alive client sends one token on every request, and hashing it was 0.7-0.9 µs of
 * each (OpenSSL's per-call setup, measured; `pnpm bench` profiles, bench/README.md). Only the
 * digest is reused; the token is still looked up, so a revoked or expired one is refused at once.
 *
 * The token is held as long as its connection is open, as the request that carried it was. The
 * comparison with the previous one takes the same time wherever they differ, so even on a
 * connection a proxy shares between callers, a caller learns nothing of another's token beyond
 * whether it sent exactly the same one.
 */
export function connectionTokenDigest(socket: Socket, token: string): Buffer {
  const last = lastToken.get(socket);
  if (last !== undefined && sameText(last.token, token)) return last.digest;
  const digest = sha256(token);
  lastToken.set(socket, { token, digest });
  return digest;
}
