import type { LookupAddress } from "node:dns";

import { describe, expect, it } from "vitest";

import { checkWebhookUrl, createOutboundPolicy, isPublicAddress } from "./outbound-guard.ts";

const strict = createOutboundPolicy([]);

describe("the outbound address guard", () => {
  it.each([
    "93.184.216.34",
    "8.8.8.8",
    "1.1.1.1",
    "2606:4700::1111",
    "2a00:1450:4001:81c::200e",
    "64:ff9b::5db8:d822",
    "2002:5db8:d822::1",
    "::ffff:0:5db8:d822",
  ])("lets the public address %s through", (address) => {
    expect(strict.isAllowedAddress(address, "hooks.example.com")).toBe(true);
  });

  it.each([
    "127.0.0.1",
    "10.1.2.3",
    "172.16.0.1",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",
    "::1",
    "::",
    "fe80::1",
    "fd00::1",
    "::ffff:127.0.0.1",
    "::ffff:a01:203",
    "::ffff:169.254.169.254",
    "64:ff9b::7f00:1",
    "64:ff9b::a9fe:a9fe",
    "2002:7f00:1::",
    "2002:c0a8:101::1",
  ])("refuses the non-public address %s", (address) => {
    expect(strict.isAllowedAddress(address, "hooks.example.com")).toBe(false);
  });

  it("takes literal public addresses in webhook URLs, and refuses mapped private ones", () => {
    expect(() => checkWebhookUrl("https://93.184.216.34/hook", strict)).not.toThrow();
    expect(() => checkWebhookUrl("https://[2606:4700::1111]/hook", strict)).not.toThrow();
    expect(() => checkWebhookUrl("http://[::ffff:127.0.0.1]/hook", strict)).toThrow(/PLANTSTORE_WEBHOOK_ALLOWED_HOSTS/);
  });

  it("allows a listed CIDR, and nothing beside it", () => {
    const policy = createOutboundPolicy(["10.0.0.0/8"]);
    expect(policy.isAllowedAddress("10.9.8.7", "internal")).toBe(true);
    expect(policy.isAllowedAddress("192.168.1.1", "internal")).toBe(false);
  });

  // Every form below got past the hand-written deny-list (issue 23). Each is checked where a URL is
  // stored (`webhooks add`), where a name resolves at delivery (`lookup`, which Node answers for an
  // IP literal without asking any resolver) and by the verdict the sender asks for literals. Nothing
  // here connects anywhere.
  describe.each([
    ["IPv4-compatible loopback", "::127.0.0.1", "http://[::127.0.0.1]/hook"],
    ["IPv4-compatible private", "::10.1.2.3", "http://[::10.1.2.3]/hook"],
    ["IPv4-translated loopback (RFC 6145)", "::ffff:0:127.0.0.1", "http://[::ffff:0:127.0.0.1]/hook"],
    ["IPv4-translated link-local", "::ffff:0:169.254.169.254", "http://[::ffff:0:169.254.169.254]/hook"],
    ["site-local (fec0::/10)", "fec0::1", "http://[fec0::1]/hook"],
    ["site-local, top of the range", "feff:ffff::1", "http://[feff:ffff::1]/hook"],
    ["local-use NAT64 (64:ff9b:1::/48)", "64:ff9b:1::808:808", "http://[64:ff9b:1::8.8.8.8]/hook"],
    ["discard-only (100::/64)", "100::1", "http://[100::1]/hook"],
    ["Teredo (2001::/32)", "2001::5db8:d822", "http://[2001::5db8:d822]/hook"],
    ["documentation (2001:db8::/32)", "2001:db8::1", "http://[2001:db8::1]/hook"],
    ["outside global unicast (2000::/3)", "4000::1", "http://[4000::1]/hook"],
    ["IPv4 documentation (TEST-NET-1)", "192.0.2.1", "http://192.0.2.1/hook"],
    ["IPv4 broadcast", "255.255.255.255", "http://255.255.255.255/hook"],
  ])("the %s address", (_form, address, url) => {
    it("is not public", () => {
      expect(isPublicAddress(address)).toBe(false);
      expect(strict.isAllowedAddress(address, "hooks.example.com")).toBe(false);
    });

    it("is refused by `webhooks add`", () => {
      expect(() => checkWebhookUrl(url, strict)).toThrow(/PLANTSTORE_WEBHOOK_ALLOWED_HOSTS/);
    });

    it("is never handed to a connection at delivery", async () => {
      const outcome = await new Promise<{ error: NodeJS.ErrnoException | null; addresses?: LookupAddress[] }>(
        (resolve) => {
          strict.lookup(address, { all: true }, (error, addresses) => resolve({ error, addresses }));
        },
      );
      expect(outcome.error?.code).toBe("EWEBHOOKADDRESS");
      expect(outcome.addresses).toBeUndefined();
    });
  });

  it("still lets an operator allow such an address by CIDR", () => {
    const policy = createOutboundPolicy(["fec0::/10"]);
    expect(policy.isAllowedAddress("fec0::1", "site.internal")).toBe(true);
    expect(policy.isAllowedAddress("fd00::1", "site.internal")).toBe(false);
  });
});
