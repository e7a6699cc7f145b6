import type { RunningServer } from "@plantstore/server";
import * as plantStoreServer from "@plantstore/server";
import { checkedFetch } from "@plantstore/test-support/checked-fetch";
import { startRealServer } from "@plantstore/test-support/real-server";
import { TEST_TOKEN as TOKEN } from "@plantstore/test-support/test-config";
import { SignJWT } from "jose";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import {
  createPlantStoreClient,
  PlantStoreError,
  PlantStoreForbiddenError,
  PlantStoreRateLimitError,
  PlantStoreUnauthorizedError,
} from "../src/index.ts";

const SECRET = "client-test-secret-of-at-least-32-chars";
let server: RunningServer;

beforeAll(async () => {
  server = await startRealServer(plantStoreServer, {
    config: {
      jwt: { issuer: "https://idp.test/", audience: "plantstore", keys: { secret: SECRET }, clockSkewSec: 30 },
      rateLimits: { token: { name: "token", points: 3, windowSec: 60 }, authFailures: null },
    },
  });
});
afterAll(async () => {
  await server.close();
});

const jwt = (sub: string, scope: string, exp = Math.floor(Date.now() / 1000) + 600) =>
  new SignJWT({ iss: "https://idp.test/", aud: "plantstore", sub, scope, exp, client_id: "shop" })
    .setProtectedHeader({ alg: "HS256" })
    .sign(new TextEncoder().encode(SECRET));
const clientWith = (token: string) => createPlantStoreClient({ baseUrl: server.url, token, fetch: checkedFetch });

describe("whoAmI against the real server", () => {
  it("describes a development token", async () => {
    expect(await clientWith(TOKEN).whoAmI()).toEqual({
      kind: "static",
      id: "static-1",
      name: "PLANTSTORE_TOKENS #1",
      scopes: ["plants:read", "plants:write"],
      expiresAt: null,
    });
  });

  it("describes a JWT: subject, client, scopes, expiry", async () => {
    const exp = Math.floor(Date.now() / 1000) + 600;
    expect(await clientWith(await jwt("who", "plants:read", exp)).whoAmI()).toEqual({
      kind: "jwt",
      id: "who",
      name: "shop",
      scopes: ["plants:read"],
      expiresAt: new Date(exp * 1000).toISOString(),
    });
  });
});

describe("typed errors for 401, 403 and 429", () => {
  it("401: PlantStoreUnauthorizedError with the challenge, still a PlantStoreError", async () => {
    const error = await clientWith("not-a-valid-token")
      .createPlant({ id: 1n, name: "a" })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PlantStoreUnauthorizedError);
    expect(error).toBeInstanceOf(PlantStoreError);
    expect(error).toMatchObject({
      status: 401,
      code: 40101,
      codeName: "INVALID_TOKEN",
      challenge: 'Bearer realm="plantstore", error="invalid_token"',
    });
  });

  it("403: PlantStoreForbiddenError naming the missing scope, on create, list and delete", async () => {
    const reader = clientWith(await jwt("reader", "plants:read"));
    await expect(reader.createPlant({ id: 1n, name: "a" })).rejects.toBeInstanceOf(PlantStoreForbiddenError);
    await expect(reader.createPlant({ id: 1n, name: "a" })).rejects.toMatchObject({
      status: 403,
      code: 40300,
      requiredScopes: ["plants:write"],
    });
    await expect(reader.deletePlant(1n)).rejects.toBeInstanceOf(PlantStoreForbiddenError);
    const writer = clientWith(await jwt("writer", "plants:write"));
    await expect(writer.listPlants()).rejects.toMatchObject({ status: 403, requiredScopes: ["plants:read"] });
  });

  it("429: PlantStoreRateLimitError with retryAfter in seconds", async () => {
    const client = clientWith(await jwt("busy", "plants:read"));
    for (let i = 0; i < 3; i++) await client.whoAmI();
    const error = await client.whoAmI().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PlantStoreRateLimitError);
    expect(error).toMatchObject({ status: 429, code: 42900, codeName: "RATE_LIMITED" });
    const { retryAfter } = error as PlantStoreRateLimitError;
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    await expect(client.listPlants()).rejects.toBeInstanceOf(PlantStoreRateLimitError);
  });
});
