import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from "node:dns";
import { BlockList, isIP } from "node:net";

/**
 * Refuses webhook targets on private, loopback, link-local and other non-public addresses (SSRF),
 * unless PLANTSTORE_WEBHOOK_ALLOWED_HOSTS names the host or a CIDR holding its address. The check
 * runs on the address actually connected to (a custom DNS lookup), so DNS rebinding cannot slip
 * past a check made earlier on the name.
 */
const FORBIDDEN = new BlockList();
for (const [net, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.0.0.0", 24],
  ["192.168.0.0", 16],
  ["198.18.0.0", 15],
  ["224.0.0.0", 4],
  ["240.0.0.0", 4],
] as const) {
  FORBIDDEN.addSubnet(net, prefix, "ipv4");
}
for (const [net, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["::ffff:0:0", 96],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
] as const) {
  FORBIDDEN.addSubnet(net, prefix, "ipv6");
}

export type OutboundPolicy = {
  isAllowedAddress(address: string, hostname: string): boolean;
  /** A `lookup` for http.request that only yields allowed addresses. */
  lookup: typeof dnsLookup;
};

export function createOutboundPolicy(allowed: readonly string[]): OutboundPolicy {
  const allowedHosts = new Set<string>();
  const allowedNets = new BlockList();
  for (const entry of allowed) {
    const [net, prefix] = entry.split("/");
    if (net !== undefined && prefix !== undefined && isIP(net) !== 0) {
      allowedNets.addSubnet(net, Number(prefix), isIP(net) === 6 ? "ipv6" : "ipv4");
    } else if (net !== undefined && isIP(net) !== 0) {
      allowedNets.addAddress(net, isIP(net) === 6 ? "ipv6" : "ipv4");
    } else {
      allowedHosts.add(entry.toLowerCase());
    }
  }

  const isAllowedAddress = (address: string, hostname: string): boolean => {
    const family = isIP(address) === 6 ? "ipv6" : "ipv4";
    if (allowedHosts.has(hostname.toLowerCase().replace(/^\[|\]$/g, ""))) return true;
    if (allowedNets.check(address, family)) return true;
    return !FORBIDDEN.check(address, family);
  };

  const lookup = ((hostname: string, options: LookupOptions, callback: (...args: unknown[]) => void) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error);
      const list = addresses as LookupAddress[];
      const permitted = list.filter((a) => isAllowedAddress(a.address, hostname));
      if (permitted.length === 0) {
        const refused = Object.assign(new Error(`webhook target ${hostname} resolves only to non-public addresses`), {
          code: "EWEBHOOKADDRESS",
        });
        return callback(refused);
      }
      if (options.all === true) return callback(null, permitted);
      return callback(null, permitted[0]!.address, permitted[0]!.family);
    });
  }) as unknown as typeof dnsLookup;

  return { isAllowedAddress, lookup };
}

/** Checks a URL before it is stored: http(s) only, and a literal address must be allowed. */
export function checkWebhookUrl(raw: string, policy: OutboundPolicy): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(`not a URL: ${raw}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new Error("webhook URLs must be http or https");
  if (url.username !== "" || url.password !== "") throw new Error("webhook URLs must not carry credentials");
  const host = url.hostname.replace(/^\[|\]$/g, "");
  if (isIP(host) !== 0 && !policy.isAllowedAddress(host, host)) {
    throw new Error(
      `${host} is a private, loopback or link-local address; allow it with PLANTSTORE_WEBHOOK_ALLOWED_HOSTS`,
    );
  }
  if (host === "localhost" && !policy.isAllowedAddress("127.0.0.1", host)) {
    throw new Error("localhost is loopback; allow it with PLANTSTORE_WEBHOOK_ALLOWED_HOSTS");
  }
  return url;
}
