import ipaddr from "ipaddr.js";

/**
 * IPv6 clients are counted per /64: the smallest prefix one subscriber or host is normally given
 * (RFC 6177, RFC 7421), and one that privacy addresses (RFC 8981) rotate within, so a client
 * cannot buy itself a new allowance per address.
 */
const IPV6_GROUP_PREFIX = 64;

/**
 * The key a client address counts under in the per-address limits: one key per client, however
 * its address is spelled. IPv4 in dotted decimal, whether it came as `10.7.7.7` or IPv4-mapped
 * (`::ffff:10.7.7.7`, `::ffff:a07:707`, `0:0:0:0:0:ffff:10.7.7.7`); IPv6 as its /64 network in
 * canonical form (`2001:db8:1:2::/64`). Anything else (no address at all) is its own key.
 */
export function addressGroup(address: string): string {
  if (!ipaddr.isValid(address)) return address;
  const parsed = ipaddr.process(address);
  if (parsed.kind() === "ipv4") return parsed.toString();
  const bytes = parsed.toByteArray();
  bytes.fill(0, IPV6_GROUP_PREFIX / 8);
  return `${ipaddr.fromByteArray(bytes).toString()}/${IPV6_GROUP_PREFIX}`;
}
