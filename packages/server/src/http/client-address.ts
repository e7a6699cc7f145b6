import type { IncomingMessage } from "node:http";
import { isIP } from "node:net";
import proxyAddr from "proxy-addr";

/** The address a request came from, as far as the service can tell (see `clientAddressOf`). */
export type ClientAddress = (req: IncomingMessage) => string;

/** Named ranges `PLANTSTORE_TRUSTED_PROXIES` accepts besides IPs and CIDRs (proxy-addr's). */
export const TRUSTED_PROXY_KEYWORDS = ["loopback", "linklocal", "uniquelocal"] as const;

const PREFIX_LENGTH = /^\d{1,3}$/;

/**
 * Why `entry` cannot be a trusted proxy, or undefined when it can: an IPv4/IPv6 address, a CIDR
 * range, or a keyword. Stricter than proxy-addr alone, whose parser also takes forms such as
 * `10` (0.0.0.10) or netmasks, so a typo cannot quietly trust an unintended address.
 */
export function trustedProxyProblem(entry: string): string | undefined {
  if ((TRUSTED_PROXY_KEYWORDS as readonly string[]).includes(entry)) return undefined;
  const slash = entry.indexOf("/");
  const address = slash === -1 ? entry : entry.slice(0, slash);
  const family = isIP(address);
  if (family === 0) return `"${entry}" is not an IP address, a CIDR range (10.0.0.0/8) or one of ${TRUSTED_PROXY_KEYWORDS.join(", ")}`;
  if (slash !== -1) {
    const prefix = entry.slice(slash + 1);
    const max = family === 4 ? 32 : 128;
    if (!PREFIX_LENGTH.test(prefix) || Number(prefix) > max) return `"${entry}": the prefix length must be a number from 1 to ${max}`;
    // Trusting every hop makes the left-most X-Forwarded-For entry, which any client writes, the address.
    if (Number(prefix) === 0) return `"${entry}" would trust every address, so any client could choose its own`;
  }
  try {
    proxyAddr.compile(entry);
  } catch (error) {
    return `"${entry}": ${(error as Error).message}`;
  }
  return undefined;
}

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
