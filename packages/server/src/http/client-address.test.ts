import type { IncomingMessage } from "node:http";

import { describe, expect, it } from "vitest";

import { clientAddressOf } from "./client-address.ts";

/** Just what the resolver reads of a request: the peer and the headers. */
function request(peer: string | undefined, forwardedFor?: string): IncomingMessage {
  const headers = forwardedFor === undefined ? {} : { "x-forwarded-for": forwardedFor };
  return { socket: { remoteAddress: peer }, headers } as unknown as IncomingMessage;
}

describe("clientAddressOf", () => {
  it("with no trusted proxy, is the TCP peer and never reads a header", () => {
    const resolve = clientAddressOf([]);
    const req = { socket: { remoteAddress: "203.0.113.7" } } as IncomingMessage;
    Object.defineProperty(req, "headers", {
      get: () => {
        throw new Error("headers were read");
      },
    });
    expect(resolve(req)).toBe("203.0.113.7");
    expect(resolve(request(undefined))).toBe("");
  });

  it("ignores X-Forwarded-For from a peer that is not trusted", () => {
    const resolve = clientAddressOf(["10.0.0.0/8"]);
    expect(resolve(request("203.0.113.7", "198.51.100.1"))).toBe("203.0.113.7");
    expect(resolve(request("203.0.113.7"))).toBe("203.0.113.7");
  });

  it("walks X-Forwarded-For from the right past trusted hops, to the first untrusted one", () => {
    const resolve = clientAddressOf(["127.0.0.1", "10.0.0.0/8"]);
    expect(resolve(request("127.0.0.1"))).toBe("127.0.0.1");
    expect(resolve(request("127.0.0.1", "203.0.113.7"))).toBe("203.0.113.7");
    // Left of the real client is whatever the client sent: never believed.
    expect(resolve(request("127.0.0.1", "198.51.100.1, 203.0.113.7"))).toBe("203.0.113.7");
    expect(resolve(request("127.0.0.1", "198.51.100.1, 203.0.113.7, 10.1.2.3"))).toBe("203.0.113.7");
    // Every hop trusted: the left-most one is the client.
    expect(resolve(request("127.0.0.1", "10.9.9.9,10.1.2.3"))).toBe("10.9.9.9");
    // IPv6 clients alike.
    expect(resolve(request("127.0.0.1", "198.51.100.1, 2001:db8::5"))).toBe("2001:db8::5");
  });

  it("trusts an IPv4 peer seen through an IPv6 socket (::ffff:127.0.0.1)", () => {
    expect(clientAddressOf(["127.0.0.1"])(request("::ffff:127.0.0.1", "203.0.113.7"))).toBe("203.0.113.7");
    expect(clientAddressOf(["loopback"])(request("::1", "203.0.113.7"))).toBe("203.0.113.7");
  });

  it("counts the hop that passed on something other than an address, not that text", () => {
    const resolve = clientAddressOf(["127.0.0.1", "10.0.0.0/8"]);
    expect(resolve(request("127.0.0.1", "not-an-address"))).toBe("127.0.0.1");
    expect(resolve(request("127.0.0.1", "anything, 10.1.2.3"))).toBe("10.1.2.3");
    expect(resolve(request("127.0.0.1", " , "))).toBe("127.0.0.1");
  });
});
