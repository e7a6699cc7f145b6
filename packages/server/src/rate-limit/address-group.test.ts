import { describe, expect, it } from "vitest";

import { addressGroup } from "./address-group.ts";

describe("addressGroup: the key a client address counts under", () => {
  it.each([
    "10.7.7.7",
    "::ffff:10.7.7.7",
    "::ffff:a07:707",
    "0:0:0:0:0:ffff:10.7.7.7",
    "::FFFF:10.7.7.7",
    "0000:0000:0000:0000:0000:ffff:0a07:0707",
  ])("%s is 10.7.7.7", (spelling) => {
    expect(addressGroup(spelling)).toBe("10.7.7.7");
  });

  it.each([
    "2001:db8:1:2::1",
    "2001:db8:1:2:ffff:ffff:ffff:ffff",
    "2001:0DB8:0001:0002:0:0:0:0",
    "2001:db8:1:2::1%eth0",
  ])("%s is its /64", (spelling) => {
    expect(addressGroup(spelling)).toBe("2001:db8:1:2::/64");
  });

  it("keeps other /64s, loopback and non-addresses apart", () => {
    expect(addressGroup("2001:db8:1:3::1")).toBe("2001:db8:1:3::/64");
    expect(addressGroup("::1")).toBe("::/64");
    expect(addressGroup("127.0.0.1")).toBe("127.0.0.1");
    expect(addressGroup("")).toBe("");
  });
});
