import { isIP } from "node:net";

import proxyAddr from "proxy-addr";

/** Named ranges `PLANTSTORE_TRUSTED_PROXIES` accepts besides IPs and CIDRs (proxy-addr's). */
const TRUSTED_PROXY_KEYWORDS = ["loopback", "linklocal", "uniquelocal"] as const;

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
  if (family === 0)
    return `"${entry}" is not an IP address, a CIDR range (10.0.0.0/8) or one of ${TRUSTED_PROXY_KEYWORDS.join(", ")}`;
  if (slash !== -1) {
    const prefix = entry.slice(slash + 1);
    const max = family === 4 ? 32 : 128;
    if (!PREFIX_LENGTH.test(prefix) || Number(prefix) > max)
      return `"${entry}": the prefix length must be a number from 1 to ${max}`;
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
