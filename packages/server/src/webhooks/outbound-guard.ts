import { lookup as dnsLookup, type LookupOptions } from "node:dns";
import { BlockList, isIP } from "node:net";

import ipaddr from "ipaddr.js";

/**
 * Refuses webhook targets on private, loopback, link-local and other non-public addresses (SSRF),
 * unless PLANTSTORE_WEBHOOK_ALLOWED_HOSTS names the host or a CIDR holding its address. The check
 * runs on the address actually connected to (a custom DNS lookup), so DNS rebinding cannot slip
 * past a check made earlier on the name.
 *
 * Which addresses are public is ipaddr.js's special-purpose registry (IANA's, kept up to date by its
 * maintainers), not a list of ours: a hand list missed site-local, discard-only and local-use NAT64
 * ranges. Only what it calls `unicast` passes; a name it adds later is refused until we look at it.
 */
// IANA's Global Unicast allocation (RFC 4291 §2.4): the rest of the IPv6 space outside the special
// registry is unassigned, and nothing legitimate answers webhooks there.
const GLOBAL_UNICAST_V6 = ipaddr.IPv6.parseCIDR("2000::/3");
// RFC 6052's well-known NAT64 prefix, whose last 32 bits are a public IPv4 address. The registry's
// `rfc6052` also holds 64:ff9b:1::/48, the local-use prefix (RFC 8215), which is never public.
const WELL_KNOWN_NAT64 = ipaddr.IPv6.parseCIDR("64:ff9b::/96");

/** Whether `address` (IPv4 or IPv6 text, as `dns.lookup` or a URL gives it) is public unicast. */
export function isPublicAddress(address: string): boolean {
  let parsed: ipaddr.IPv4 | ipaddr.IPv6;
  try {
    parsed = ipaddr.parse(address);
  } catch {
    return false;
  }
  if (parsed.kind() === "ipv4") return parsed.range() === "unicast";
  const v6 = parsed as ipaddr.IPv6;
  const embedded = embeddedIPv4(v6);
  if (embedded !== undefined) return embedded.range() === "unicast";
  return v6.range() === "unicast" && v6.match(GLOBAL_UNICAST_V6);
}

/**
 * The IPv4 address an IPv6 form carries, for the forms that reach it: mapped (::ffff:a.b.c.d),
 * translated (::ffff:0:a.b.c.d, RFC 6145), compatible (::a.b.c.d, RFC 4291 §2.5.5.1), NAT64's
 * well-known prefix (RFC 6052) and 6to4 (2002:AABB:CCDD::/48, RFC 3056). Such an address is as
 * public as the IPv4 address inside it, whatever the IPv6 registry says of the outer form.
 */
function embeddedIPv4(address: ipaddr.IPv6): ipaddr.IPv4 | undefined {
  const parts = address.parts;
  const zeroUpTo = (end: number) => parts.slice(0, end).every((part) => part === 0);
  const fromGroups = (high = 0, low = 0) => new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
  const mappedOrCompatible = zeroUpTo(5) && (parts[5] === 0xffff || parts[5] === 0);
  const translated = zeroUpTo(4) && parts[4] === 0xffff && parts[5] === 0;
  if (mappedOrCompatible || translated || address.match(WELL_KNOWN_NAT64)) return fromGroups(parts[6], parts[7]);
  if (parts[0] === 0x2002) return fromGroups(parts[1], parts[2]);
  return undefined;
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
    return isPublicAddress(address);
  };

  const lookup = ((hostname: string, options: LookupOptions, callback: (...args: unknown[]) => void) => {
    dnsLookup(hostname, { ...options, all: true }, (error, addresses) => {
      if (error) return callback(error);
      const list = addresses;
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
