import { createHmac } from "node:crypto";
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

import { type CryptoKey, exportJWK, exportSPKI, generateKeyPair, type JWK, type JWTPayload, SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import type { JwtConfig } from "../../src/config.ts";
import { expectErrorShape, startTestServer, type TestServer } from "../support/harness.ts";
import { SkippableClock } from "../support/skippable-clock.ts";

const ISSUER = "https://idp.example.test/";
const AUDIENCE = "plantstore";
const INVALID = 'Bearer realm="plantstore", error="invalid_token"';

type KeyPair = { kid: string; privateKey: CryptoKey; publicKey: CryptoKey; jwk: JWK };

async function rsaKey(kid: string): Promise<KeyPair> {
  const { privateKey, publicKey } = await generateKeyPair("RS256", { extractable: true });
  return { kid, privateKey, publicKey, jwk: { ...(await exportJWK(publicKey)), kid, alg: "RS256", use: "sig" } };
}

/** A real JWKS endpoint on an ephemeral port: serves whatever keys the test sets, and counts fetches. */
async function startJwksServer(): Promise<{
  url: string;
  setKeys(keys: JWK[]): void;
  fetches(): number;
  close(): Promise<void>;
}> {
  let keys: JWK[] = [];
  let fetches = 0;
  const server: Server = createServer((req, res) => {
    fetches++;
    res.writeHead(200, { "content-type": "application/json" });
    res.end(JSON.stringify({ keys }));
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/.well-known/jwks.json`,
    setKeys: (next) => (keys = next),
    fetches: () => fetches,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

const now = () => Math.floor(Date.now() / 1000);

function sign(claims: JWTPayload, key: CryptoKey | Uint8Array, header: { alg: string; kid?: string }): Promise<string> {
  return new SignJWT(claims).setProtectedHeader(header).sign(key);
}

const base = (overrides: JWTPayload = {}): JWTPayload => ({
  iss: ISSUER,
  aud: AUDIENCE,
  sub: "client-42",
  client_id: "shop-importer",
  scope: "plants:read plants:write",
  iat: now(),
  exp: now() + 600,
  ...overrides,
});

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString("base64url");

function jwtConfig(keys: JwtConfig["keys"]): JwtConfig {
  return { issuer: ISSUER, audience: AUDIENCE, keys, clockSkewSec: 30 };
}

describe("JWT bearer tokens verified against a JWKS", () => {
  let jwks: Awaited<ReturnType<typeof startJwksServer>>;
  let server: TestServer;
  let keyA: KeyPair;
  let keyB: KeyPair;
  let nextId = 1;
  /** The server's clock: the key set's age and the verified-token cache are timed by it. */
  const clock = new SkippableClock();

  beforeAll(async () => {
    [keyA, keyB] = await Promise.all([rsaKey("key-a"), rsaKey("key-b")]);
    jwks = await startJwksServer();
    jwks.setKeys([keyA.jwk]);
    // No cool-down, so a new kid is fetched at once; a short max age, so a withdrawn key stops working.
    server = await startTestServer({ jwt: jwtConfig({ jwksUrl: jwks.url, cooldownMs: 0, maxAgeMs: 500 }) }, { clock });
  });
  afterAll(async () => {
    await server?.close();
    await jwks?.close();
  });

  const create = (token: string) =>
    server.send({
      method: "POST",
      path: "/plants",
      headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      body: `{"id":${nextId++},"name":"Fern"}`,
    });
  const list = (token: string) =>
    server.send({ method: "GET", path: "/plants", headers: { authorization: `Bearer ${token}` } });
  const signA = (claims: JWTPayload = base()) => sign(claims, keyA.privateKey, { alg: "RS256", kid: keyA.kid });

  it("accepts a valid token: creates, lists, and whoami names its subject, client, scopes and expiry", async () => {
    const exp = now() + 600;
    const token = await signA(base({ exp }));
    expect((await create(token)).status).toBe(200);
    expect((await list(token)).status).toBe(200);
    const who = await server.send({ method: "GET", path: "/whoami", headers: { authorization: `Bearer ${token}` } });
    expect(who.json).toEqual({
      kind: "jwt",
      id: "client-42",
      name: "shop-importer",
      scopes: ["plants:read", "plants:write"],
      expiresAt: new Date(exp * 1000).toISOString(),
    });
  });

  it.each([
    ["scp as an array", { scope: undefined, scp: ["plants:write"] }],
    ["scp as a space-separated string", { scope: undefined, scp: "plants:write plants:read" }],
    ["scope as a space-separated string", { scope: "plants:write" }],
  ])("takes scopes from %s", async (_, claims) => {
    expect((await create(await signA(base(claims as JWTPayload)))).status).toBe(200);
  });

  it("answers 403 (40300) with insufficient_scope when the token lacks plants:write", async () => {
    const token = await signA(base({ scope: "plants:read" }));
    const response = await create(token);
    expectErrorShape(response, 403, 40300);
    expect(response.headers["www-authenticate"]).toBe(
      'Bearer realm="plantstore", error="insufficient_scope", scope="plants:write"',
    );
    expect((await list(token)).status).toBe(200);
  });

  it("answers 403 for a token with no scope claim at all", async () => {
    expectErrorShape(await list(await signA(base({ scope: undefined }))), 403, 40300);
  });

  it.each([
    ["an expired token", () => base({ exp: now() - 120 })],
    ["a not-yet-valid token (nbf)", () => base({ nbf: now() + 120 })],
    ["a wrong audience", () => base({ aud: "another-api" })],
    ["a wrong issuer", () => base({ iss: "https://evil.example.test/" })],
    ["a token without exp", () => base({ exp: undefined })],
    ["a token without sub", () => base({ sub: undefined })],
  ])("refuses %s with 401 (40101) and error=invalid_token", async (_, claims) => {
    const response = await create(await signA(claims()));
    expectErrorShape(response, 401, 40101);
    expect(response.headers["www-authenticate"]).toBe(INVALID);
  });

  it("allows the documented 30 s of clock skew on exp and nbf, not more", async () => {
    expect((await create(await signA(base({ exp: now() - 10 })))).status).toBe(200);
    expect((await create(await signA(base({ nbf: now() + 10 })))).status).toBe(200);
    expectErrorShape(await create(await signA(base({ exp: now() - 45 }))), 401, 40101);
  });

  // Issue 23: each of these passed jwtVerify and then failed the answer's own schema (500 50000).
  it.each([
    ["exp beyond what a timestamp can say (1e20)", () => base({ exp: 1e20 })],
    ["exp after 9999-12-31", () => base({ exp: 253_402_300_800 })],
    ["a numeric sub", () => base({ sub: 123 as unknown as string })],
    ["an object for sub", () => base({ sub: {} as unknown as string })],
    ["an empty sub", () => base({ sub: "" })],
  ])(
    "refuses a validly signed token with %s: 401 (40101) invalid_token on /whoami and every operation",
    async (_, claims) => {
      const token = await signA(claims());
      const who = await server.send({ method: "GET", path: "/whoami", headers: { authorization: `Bearer ${token}` } });
      expectErrorShape(who, 401, 40101);
      expect(who.headers["www-authenticate"]).toBe(INVALID);
      expectErrorShape(await list(token), 401, 40101);
      expectErrorShape(await create(token), 401, 40101);
    },
  );

  it("takes a sub of digits as the string it is, and the latest exp a timestamp can say", async () => {
    const token = await signA(base({ sub: "123", exp: 253_402_300_799 }));
    const who = await server.send({ method: "GET", path: "/whoami", headers: { authorization: `Bearer ${token}` } });
    expect(who.status).toBe(200);
    expect(who.json).toMatchObject({ id: "123", expiresAt: "9999-12-31T23:59:59.000Z" });
  });

  it("refuses a wrong signature: signed by another key under key A's kid", async () => {
    expectErrorShape(await create(await sign(base(), keyB.privateKey, { alg: "RS256", kid: keyA.kid })), 401, 40101);
  });

  it("refuses a tampered payload", async () => {
    const [header, , signature] = (await signA()).split(".");
    const forged = `${header}.${b64({ ...base(), sub: "admin" })}.${signature}`;
    expectErrorShape(await create(forged), 401, 40101);
  });

  it('refuses alg "none" (unsigned), with or without a kid', async () => {
    for (const header of [{ alg: "none" }, { alg: "none", kid: keyA.kid }, { alg: "NONE", typ: "JWT" }]) {
      expectErrorShape(await create(`${b64(header)}.${b64(base())}.`), 401, 40101);
    }
  });

  it("refuses HS256 signed with the RSA public key (algorithm confusion)", async () => {
    const publicPem = await exportSPKI(keyA.publicKey);
    for (const secret of [publicPem, JSON.stringify(keyA.jwk), keyA.jwk.n!]) {
      const token = await sign(base(), new TextEncoder().encode(secret), { alg: "HS256", kid: keyA.kid });
      const response = await create(token);
      expectErrorShape(response, 401, 40101);
      expect(response.headers["www-authenticate"]).toBe(INVALID);
    }
  });

  it("refuses garbage shaped like a JWT", async () => {
    expectErrorShape(await create("a.b.c"), 401, 40101);
    expectErrorShape(await create(`${b64({ alg: "RS256", kid: keyA.kid })}.${b64(base())}.AAAA`), 401, 40101);
  });

  it("picks up a rotated key: a token with a new kid works once the JWKS publishes it", async () => {
    const tokenB = await sign(base(), keyB.privateKey, { alg: "RS256", kid: keyB.kid });
    expectErrorShape(await create(tokenB), 401, 40101);
    const before = jwks.fetches();
    jwks.setKeys([keyA.jwk, keyB.jwk]);
    expect((await create(tokenB)).status).toBe(200);
    expect(jwks.fetches()).toBeGreaterThan(before);
  });

  it("stops accepting tokens of a key the JWKS withdraws (how JWTs are revoked) once the set is re-fetched", async () => {
    const tokenA = await signA();
    jwks.setKeys([keyA.jwk, keyB.jwk]);
    expect((await create(tokenA)).status).toBe(200);
    jwks.setKeys([keyB.jwk]);
    // PLANTSTORE_JWKS_MAX_AGE_MS is 500 ms here; verified tokens are trusted no longer than that.
    await clock.skip(500);
    const response = await create(tokenA);
    expectErrorShape(response, 401, 40101);
    expect(response.headers["www-authenticate"]).toBe(INVALID);
    jwks.setKeys([keyA.jwk, keyB.jwk]);
  });
});

describe("JWKS fetching limits", () => {
  it("fetches again for an unknown kid at most once per cool-down", async () => {
    const [keyA, keyB] = await Promise.all([rsaKey("a"), rsaKey("b")]);
    const jwks = await startJwksServer();
    jwks.setKeys([keyA.jwk]);
    await using server = await startTestServer({
      jwt: jwtConfig({ jwksUrl: jwks.url, cooldownMs: 60_000, maxAgeMs: 300_000 }),
    });
    try {
      const post = async (token: string) =>
        (await server.send({ method: "GET", path: "/plants", headers: { authorization: `Bearer ${token}` } })).status;
      expect(await post(await sign(base(), keyA.privateKey, { alg: "RS256", kid: "a" }))).toBe(200);
      expect(jwks.fetches()).toBe(1);
      jwks.setKeys([keyA.jwk, keyB.jwk]);
      for (let i = 0; i < 5; i++)
        expect(await post(await sign(base(), keyB.privateKey, { alg: "RS256", kid: `random-${i}` }))).toBe(401);
      expect(jwks.fetches()).toBe(1);
    } finally {
      await jwks.close();
    }
  });

  it("answers 503 (50300) when the identity provider's keys cannot be fetched", async () => {
    const key = await rsaKey("a");
    const jwks = await startJwksServer();
    const url = jwks.url;
    await jwks.close();
    await using server = await startTestServer({ jwt: jwtConfig({ jwksUrl: url, cooldownMs: 0, maxAgeMs: 300_000 }) });
    const response = await server.send({
      method: "GET",
      path: "/plants",
      headers: { authorization: `Bearer ${await sign(base(), key.privateKey, { alg: "RS256", kid: "a" })}` },
    });
    expectErrorShape(response, 503, 50300);
  });
});

describe("JWT bearer tokens verified with a shared secret (HS256)", () => {
  const SECRET = "a-shared-secret-of-at-least-32-characters!";
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer({ jwt: jwtConfig({ secret: SECRET }) });
  });
  afterAll(async () => {
    await server?.close();
  });
  const status = async (token: string) =>
    (await server.send({ method: "GET", path: "/plants", headers: { authorization: `Bearer ${token}` } })).status;
  const hmac = (claims: JWTPayload, secret = SECRET, alg = "HS256") =>
    sign(claims, new TextEncoder().encode(secret), { alg });

  it("accepts HS256, HS384 and HS512 with the secret", async () => {
    for (const alg of ["HS256", "HS384", "HS512"]) expect(await status(await hmac(base(), SECRET, alg))).toBe(200);
  });

  it("refuses another secret, an RS256 token, alg none, expired and wrong audience", async () => {
    const rsa = await rsaKey("k");
    expect(await status(await hmac(base(), "another-secret-that-is-long-enough-too"))).toBe(401);
    expect(await status(await sign(base(), rsa.privateKey, { alg: "RS256", kid: "k" }))).toBe(401);
    expect(await status(`${b64({ alg: "none" })}.${b64(base())}.`)).toBe(401);
    expect(await status(await hmac(base({ exp: now() - 120 })))).toBe(401);
    expect(await status(await hmac(base({ aud: "x" })))).toBe(401);
  });

  it("refuses an iat in the future beyond the 30 s of clock skew, as it allows it for exp and nbf", async () => {
    expect(await status(await hmac(base({ iat: now() + 10 })))).toBe(200);
    const response = await server.send({
      method: "GET",
      path: "/plants",
      headers: { authorization: `Bearer ${await hmac(base({ iat: now() + 3_600 }))}` },
    });
    expectErrorShape(response, 401, 40101);
    expect(response.headers["www-authenticate"]).toBe(INVALID);
  });

  /** A token signed over the JSON texts exactly as given, which a JWT library would never write. */
  const signedText = (header: string, payload: string) => {
    const signingInput = `${Buffer.from(header).toString("base64url")}.${Buffer.from(payload).toString("base64url")}`;
    return `${signingInput}.${createHmac("sha256", SECRET).update(signingInput).digest("base64url")}`;
  };
  const claimsText = (extra: string) => {
    const { iss, aud, exp, scope } = base();
    return `{"iss":${JSON.stringify(iss)},"aud":${JSON.stringify(aud)},"exp":${exp},"scope":${JSON.stringify(scope)}${extra}}`;
  };

  it("refuses a token whose payload names a claim twice, though its signature holds", async () => {
    const header = '{"alg":"HS256","typ":"JWT"}';
    expect(await status(signedText(header, claimsText(',"sub":"client-42"')))).toBe(200);
    const twice = signedText(header, claimsText(',"sub":"client-42","sub":"admin"'));
    const who = await server.send({ method: "GET", path: "/whoami", headers: { authorization: `Bearer ${twice}` } });
    expectErrorShape(who, 401, 40101);
    expect(who.headers["www-authenticate"]).toBe(INVALID);
    expect(await status(signedText(header, claimsText(',"sub":"client-42","scope":"plants:read"')))).toBe(401);
  });

  it("refuses a token whose header names a parameter twice", async () => {
    const claims = claimsText(',"sub":"client-42"');
    expect(await status(signedText('{"alg":"HS256","typ":"JWT","typ":"JWT"}', claims))).toBe(401);
    expect(await status(signedText('{"alg":"none","alg":"HS256"}', claims))).toBe(401);
  });
});
