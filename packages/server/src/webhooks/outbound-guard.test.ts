import { describe, expect, it } from "vitest";
import { checkWebhookUrl, createOutboundPolicy } from "./outbound-guard.ts";

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
});
