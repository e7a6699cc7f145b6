import type { IncomingMessage } from "node:http";
import { isIP } from "node:net";

import proxyAddr from "proxy-addr";

/** The address a request came from, as far as the service can tell (see `clientAddressOf`). */
export type ClientAddress = (req: IncomingMessage) => string;

/**
 * Compiled once at start-up. With no trusted proxies the address is the TCP peer and no header is
 * read. Otherwise, when the peer is a trusted proxy, `X-Forwarded-For` is walked from the right
 * (the entry that proxy appended) past every trusted hop, and the first untrusted one is the
 * client (proxy-addr, as Express does): entries further left were written by the client itself
 * and are never believed. Koa's `ctx.ip` with `app.proxy` would take the left-most one instead.
 */
export function clientAddressOf(trustedProxies: readonly string[]): ClientAddress {
  if (trustedProxies.length === 0) return (req) => req.socket.remoteAddress ?? "";
  const trust = proxyAddr.compile([...trustedProxies]);
  return (req) => {
    const peer = req.socket.remoteAddress;
    if (peer === undefined) return "";
    if (req.headers["x-forwarded-for"] === undefined) return peer;
    const hops = proxyAddr.all(req, trust);
    const client = hops[hops.length - 1]!;
    // A trusted hop passed on something that is not an address (typically what its own client
    // wrote): count that hop, which is known, rather than a string its clients could vary at will.
    return isIP(client) === 0 && hops.length > 1 ? hops[hops.length - 2]! : client;
  };
}
