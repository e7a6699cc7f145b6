import { readFileSync } from "node:fs";

import { describe, expect, it } from "vitest";

import { configTable, README_FILE, readmeConfigTable, tableCells, withConfigTable } from "../scripts/config-docs.ts";
import { allSettings, loadConfig } from "./config.ts";

const JWT = { PLANTSTORE_JWT_ISSUER: "https://idp.test/", PLANTSTORE_JWT_AUDIENCE: "plantstore" };

describe("loadConfig: tokens, JWT and rate limits", () => {
  it("defaults: 6000 requests per 60 s per token, 20 failed authentications per 60 s per address, no JWT, no Redis", () => {
    const config = loadConfig({});
    expect(config.rateLimits).toEqual({
      token: { name: "token", points: 6000, windowSec: 60 },
      authFailures: { name: "auth-failures", points: 20, windowSec: 60 },
    });
    expect(config.jwt).toBeUndefined();
    expect(config.redisUrl).toBeUndefined();
  });

  it("reads <n>/<s>s and off", () => {
    const config = loadConfig({ PLANTSTORE_RATE_LIMIT_TOKEN: "10/1s", PLANTSTORE_RATE_LIMIT_AUTH_FAILURES: "off" });
    expect(config.rateLimits).toEqual({ token: { name: "token", points: 10, windowSec: 1 }, authFailures: null });
    for (const bad of ["10", "10/0s", "0/1s", "10/1m", "ten/1s"]) {
      expect(() => loadConfig({ PLANTSTORE_RATE_LIMIT_TOKEN: bad })).toThrow(/PLANTSTORE_RATE_LIMIT_TOKEN/);
    }
  });

  it("takes a JWKS URL or a secret, never both, and needs issuer and audience", () => {
    expect(loadConfig({ ...JWT, PLANTSTORE_JWKS_URL: "https://idp.test/jwks" }).jwt).toEqual({
      issuer: "https://idp.test/",
      audience: "plantstore",
      keys: { jwksUrl: "https://idp.test/jwks", cooldownMs: 30_000, maxAgeMs: 300_000 },
      clockSkewSec: 30,
    });
    const secret = "s".repeat(32);
    expect(loadConfig({ ...JWT, PLANTSTORE_JWT_SECRET: secret }).jwt?.keys).toEqual({ secret });
    expect(() =>
      loadConfig({ ...JWT, PLANTSTORE_JWKS_URL: "https://idp.test/jwks", PLANTSTORE_JWT_SECRET: secret }),
    ).toThrow(/not both/);
    expect(() => loadConfig({ PLANTSTORE_JWKS_URL: "https://idp.test/jwks" })).toThrow(
      /ISSUER and PLANTSTORE_JWT_AUDIENCE/,
    );
    expect(() => loadConfig(JWT)).toThrow(/PLANTSTORE_JWKS_URL or PLANTSTORE_JWT_SECRET/);
    expect(() => loadConfig({ ...JWT, PLANTSTORE_JWKS_URL: "file:///etc/jwks" })).toThrow(/PLANTSTORE_JWKS_URL/);
  });

  it("refuses a short secret without repeating it", () => {
    const short = "too-short-secret";
    expect(() => loadConfig({ ...JWT, PLANTSTORE_JWT_SECRET: short })).toThrow(
      /PLANTSTORE_JWT_SECRET: must be at least 32/,
    );
    expect(() => loadConfig({ ...JWT, PLANTSTORE_JWT_SECRET: short })).not.toThrow(new RegExp(short));
  });

  it("accepts redis:// and rediss:// URLs only", () => {
    expect(loadConfig({ REDIS_URL: "redis://127.0.0.1:6379" }).redisUrl).toBe("redis://127.0.0.1:6379");
    expect(() => loadConfig({ REDIS_URL: "http://127.0.0.1:6379" })).toThrow(/REDIS_URL/);
  });
});

describe("loadConfig: PLANTSTORE_TRUSTED_PROXIES", () => {
  it("trusts nobody by default (the client address is the TCP peer)", () => {
    expect(loadConfig({}).trustedProxies).toEqual([]);
    expect(loadConfig({ PLANTSTORE_TRUSTED_PROXIES: " , " }).trustedProxies).toEqual([]);
  });

  it("reads comma-separated IPv4/IPv6 addresses, CIDR ranges and the keywords loopback, linklocal, uniquelocal", () => {
    const text = " 127.0.0.1, 10.0.0.0/8,172.18.0.0/16 ,::1, fd00::/8,loopback,linklocal,uniquelocal";
    expect(loadConfig({ PLANTSTORE_TRUSTED_PROXIES: text }).trustedProxies).toEqual([
      "127.0.0.1",
      "10.0.0.0/8",
      "172.18.0.0/16",
      "::1",
      "fd00::/8",
      "loopback",
      "linklocal",
      "uniquelocal",
    ]);
  });

  it("refuses start-up on an entry that is not an address, a range or a keyword, naming it", () => {
    const bad = [
      "nginx",
      "localhost",
      "10",
      "2130706433",
      "10.0.0.256",
      "10.0.0.0/33",
      "::1/129",
      "10.0.0.0/",
      "10.0.0.0/8x",
      "10.0.0.0/255.0.0.0",
      "Loopback",
    ];
    for (const entry of bad) {
      expect(() => loadConfig({ PLANTSTORE_TRUSTED_PROXIES: `127.0.0.1,${entry}` })).toThrow(
        `invalid configuration: PLANTSTORE_TRUSTED_PROXIES: "${entry}"`,
      );
    }
  });

  it("refuses a range that trusts every address (any client could then choose its own)", () => {
    for (const entry of ["0.0.0.0/0", "::/0"]) {
      expect(() => loadConfig({ PLANTSTORE_TRUSTED_PROXIES: entry })).toThrow(/would trust every address/);
    }
  });
});

describe("loadConfig: every invalid setting at once", () => {
  it("lists each invalid variable with what is wrong, in one error", () => {
    const env = {
      PORT: "eighty",
      PLANTSTORE_WORKERS: "0",
      PLANTSTORE_METRICS: "everyone",
      PLANTSTORE_RATE_LIMIT_TOKEN: "10",
      PLANTSTORE_TRUSTED_PROXIES: "nginx,10.0.0.0/33",
    };
    const error = (() => {
      try {
        loadConfig(env);
      } catch (thrown) {
        return thrown as Error;
      }
      throw new Error("loadConfig accepted an invalid configuration");
    })();
    const reported = error.message.replace(/^invalid configuration: /, "").split("; ");
    expect(reported).toEqual([
      expect.stringMatching(/^PORT: .*expected number/),
      expect.stringMatching(/^PLANTSTORE_RATE_LIMIT_TOKEN: must be <requests>\/<seconds>s/),
      'PLANTSTORE_TRUSTED_PROXIES: "nginx" is not an IP address, a CIDR range (10.0.0.0/8) or one of loopback, linklocal, uniquelocal',
      'PLANTSTORE_TRUSTED_PROXIES: "10.0.0.0/33": the prefix length must be a number from 1 to 32',
      expect.stringMatching(/^PLANTSTORE_WORKERS: .*>=1/),
      expect.stringMatching(/^PLANTSTORE_METRICS: .*"token"\|"public"\|"off"/),
    ]);
  });

  it("reports a JWT combination that does not fit alongside invalid values of other settings", () => {
    expect(() => loadConfig({ PLANTSTORE_JWT_ISSUER: "https://idp.test/", PLANTSTORE_BODY_LIMIT: "1" })).toThrow(
      /^invalid configuration: PLANTSTORE_BODY_LIMIT: .*; JWT needs PLANTSTORE_JWKS_URL or PLANTSTORE_JWT_SECRET$/,
    );
  });

  it("never repeats a secret: tokens, keys, URLs that may carry a password", () => {
    const password = "hunter2-Secret";
    const env = {
      DATABASE_URL: "",
      REDIS_URL: `http://plantstore:${password}@cache.internal:6379`,
      PLANTSTORE_JWKS_URL: `ftp://idp:${password}@idp.test/jwks`,
      PLANTSTORE_JWT_SECRET: password,
      PLANTSTORE_JWT_ISSUER: "https://idp.test/",
      PLANTSTORE_JWT_AUDIENCE: "plantstore",
    };
    expect(() => loadConfig(env)).toThrow(
      /DATABASE_URL: .*PLANTSTORE_JWKS_URL: .*PLANTSTORE_JWT_SECRET: .*REDIS_URL: /,
    );
    expect(() => loadConfig(env)).not.toThrow(new RegExp(password));
  });
});

describe("the settings table", () => {
  it("names each variable once, PLANTSTORE_-prefixed except PORT, HOST, DATABASE_URL and REDIS_URL", () => {
    const names = allSettings().map((entry) => entry.env);
    expect(new Set(names).size).toBe(names.length);
    const conventional = ["PORT", "HOST", "DATABASE_URL", "REDIS_URL"];
    expect(names.filter((name) => !name.startsWith("PLANTSTORE_") && !conventional.includes(name))).toEqual([]);
  });

  it("is the configuration table of the README (else run `pnpm --filter @plantstore/server config:docs`)", () => {
    const readme = readFileSync(README_FILE, "utf8");
    expect(tableCells(readmeConfigTable(readme))).toBe(tableCells(configTable()));
    expect(tableCells(withConfigTable(readme))).toBe(tableCells(readme));
  });
});

describe("loadConfig: the change log's retention", () => {
  it("reads <n>d, <n>h, <n>m and <n>s, 24 h by default, at least a minute", () => {
    expect(loadConfig({}).changesRetention).toBe(86_400_000);
    expect(loadConfig({ PLANTSTORE_CHANGES_RETENTION: "7d" }).changesRetention).toBe(7 * 86_400_000);
    expect(loadConfig({ PLANTSTORE_CHANGES_RETENTION: "90m" }).changesRetention).toBe(5_400_000);
    expect(loadConfig({ PLANTSTORE_CHANGES_RETENTION: "60s" }).changesRetention).toBe(60_000);
    for (const bad of ["59s", "0h", "24", "1.5h", "-1h", "1w", "h"]) {
      expect(() => loadConfig({ PLANTSTORE_CHANGES_RETENTION: bad })).toThrow(/PLANTSTORE_CHANGES_RETENTION/);
    }
  });
});
