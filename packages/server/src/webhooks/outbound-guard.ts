import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from "node:dns";
import { BlockList, isIP } from "node:net";

/**
 * Refuses webhook targets on private, loopback, link-local and other non-public addresses (SSRF),
 * unless PLANTSTORE_WEBHOOK_ALLOWED_HOSTS names the host or a CIDR holding its address. The check
 * runs on the address actually connected to (a custom DNS lookup), so DNS rebinding cannot slip
 * past a check made earlier on the name.
 */
const FORBIDDEN = new BlockList();
const FORBIDDEN_IPV4 = [
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
] as const;
// IPv4-mapped addresses (::ffff:10.0.0.1) need no rule of their own: BlockList checks them against
// the IPv4 rules. A `::ffff:0:0/96` rule would be wrong, not redundant: BlockList also checks plain
// IPv4 addresses against IPv4-mapped rules, so it would refuse every IPv4 address, public ones too.
for (const [net, prefix] of FORBIDDEN_IPV4) {
  FORBIDDEN.addSubnet(net, prefix, "ipv4");
  // The same ranges carried inside IPv6 by NAT64 (RFC 6052) and 6to4 (RFC 3056) gateways.
  const [high, low] = ipv4Groups(net);
  FORBIDDEN.addSubnet(`64:ff9b::${high}:${low}`, 96 + prefix, "ipv6");
  FORBIDDEN.addSubnet(`2002:${high}:${low}::`, 16 + prefix, "ipv6");
}
for (const [net, prefix] of [
  ["::", 128],
  ["::1", 128],
  ["fc00::", 7],
  ["fe80::", 10],
  ["ff00::", 8],
] as const) {
  FORBIDDEN.addSubnet(net, prefix, "ipv6");
}

/** `10.1.2.3` → `["a01", "203"]`: the two 16-bit IPv6 groups that hold an IPv4 address. */
function ipv4Groups(address: string): [string, string] {
  const [a = 0, b = 0, c = 0, d = 0] = address.split(".").map(Number);
  return [((a << 8) | b).toString(16), ((c << 8) | d).toString(16)];
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
