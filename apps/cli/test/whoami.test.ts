import type { RunningServer } from "@plantstore/server";
import { TEST_TOKEN as TOKEN } from "@plantstore/test-support/test-config";
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { runCli, startCheckedServer } from "./run-cli.ts";

const SECRET = "cli-test-secret-of-at-least-32-characters";
let server: RunningServer;

beforeAll(async () => {
  server = await startCheckedServer({
    jwt: { issuer: "https://idp.test/", audience: "plantstore", keys: { secret: SECRET }, clockSkewSec: 30 },
    rateLimits: { token: { name: "token", points: 2, windowSec: 60 }, authFailures: null },
  });
});
afterAll(async () => {
  await server.close();
});

const jwt = (sub: string, scope: string, exp: number) =>
  new SignJWT({ iss: "https://idp.test/", aud: "plantstore", sub, scope, exp, client_id: "shop" })
    .setProtectedHeader({ alg: "HS256" })
    .sign(new TextEncoder().encode(SECRET));

describe("plantstore whoami", () => {
  it("prints the token's kind, id, name, scopes and expiry", async () => {
    const result = await runCli(["whoami", "--url", server.url, "--token", TOKEN]);
    expect(result).toEqual({
      code: 0,
      stdout: 'static token static-1 "PLANTSTORE_TOKENS #1"\nscopes: plants:read plants:write\nexpires: never\n',
      stderr: "",
    });
  });

  it("prints JSON with --json, for a JWT from the environment", async () => {
    const exp = Math.floor(Date.now() / 1000) + 600;
    const token = await jwt("importer", "plants:read", exp);
    const result = await runCli(["whoami", "--json"], { PLANTSTORE_URL: server.url, PLANTSTORE_TOKEN: token });
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual({
      kind: "jwt",
      id: "importer",
      name: "shop",
      scopes: ["plants:read"],
      expiresAt: new Date(exp * 1000).toISOString(),
    });
    expect(result.stdout).not.toContain(token);
  });

  it("exits 1 with the catalogued error for a bad token, and says when to retry on 429", async () => {
    const refused = await runCli(["whoami", "--url", server.url, "--token", "wrong-token"]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toBe("plantstore: the bearer token is not valid (error 40101 INVALID_TOKEN, HTTP 401)\n");

    const token = await jwt("busy", "plants:read", Math.floor(Date.now() / 1000) + 600);
    for (let i = 0; i < 2; i++) expect((await runCli(["whoami", "--url", server.url, "--token", token])).code).toBe(0);
    const limited = await runCli(["whoami", "--url", server.url, "--token", token]);
    expect(limited.code).toBe(1);
    expect(limited.stderr).toMatch(
      /^plantstore: too many requests; retry after \d+ s \(error 42900 RATE_LIMITED, HTTP 429\)\n$/,
    );
  });
});
