import { ErrorCodes } from "@plantstore/schema";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { startTestServer, type TestServer } from "../support/harness.ts";
import { documentedOperations } from "../support/operations.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

type Response = {
  description: string;
  headers?: Record<string, unknown>;
  content?: Record<string, { schema: unknown }>;
  "x-error-codes"?: Array<{ error: number }>;
};
type Operation = { security?: unknown; responses: Record<string, Response> };

const operation = (path: string, method: string) =>
  (server.served.paths as unknown as Record<string, Record<string, Operation>>)[path]![method]!;
/** Every operation the served document lists, enumerated so that one added later is checked too. */
const operations = () => documentedOperations<Operation>(server.served);
const bearerScopes = (op: Operation): string[] | undefined =>
  (op.security as Array<{ bearerAuth?: string[] }> | undefined)?.[0]?.bearerAuth;

describe("GET /openapi.json on authentication, scopes and rate limits", () => {
  it("names the scope each operation needs in its security requirement, keeping the global one", () => {
    expect((server.served as unknown as { security: unknown }).security).toEqual([{ bearerAuth: [] }]);
    // Every operation of the document, so a new one fails here until its scopes are written down.
    const security = Object.fromEntries(operations().map((o) => [`${o.method} ${o.path}`, o.operation.security]));
    expect(security).toEqual({
      "post /plants": [{ bearerAuth: ["plants:write"] }],
      "get /plants": [{ bearerAuth: ["plants:read"] }],
      "head /plants": [{ bearerAuth: ["plants:read"] }],
      "get /plants/{id}": [{ bearerAuth: ["plants:read"] }],
      "head /plants/{id}": [{ bearerAuth: ["plants:read"] }],
      "patch /plants/{id}": [{ bearerAuth: ["plants:read", "plants:write"] }],
      "put /plants/{id}": [{ bearerAuth: ["plants:write"] }],
      "get /plants/events": [{ bearerAuth: ["plants:read"] }],
      "head /plants/events": [{ bearerAuth: ["plants:read"] }],
      "delete /plants/{id}": [{ bearerAuth: ["plants:write"] }],
      "get /whoami": [{ bearerAuth: [] }],
      "head /whoami": [{ bearerAuth: [] }],
    });
    const scheme = (server.served.components as unknown as { securitySchemes: { bearerAuth: Record<string, string> } })
      .securitySchemes.bearerAuth;
    expect(scheme).toMatchObject({ type: "http", scheme: "bearer" });
    expect(scheme["description"]).toMatch(/plants:read.*plants:write/s);
  });

  it("declares 401 and 429 on every protected operation, and 403 on those that need a scope, with the Error body (none for HEAD), codes and headers", () => {
    const isProtected = operations().filter((o) => bearerScopes(o.operation) !== undefined);
    const needsScope = (op: Operation) => bearerScopes(op)!.length > 0;
    expect(isProtected.length).toBeGreaterThan(0);
    expect(isProtected.filter((o) => needsScope(o.operation)).length).toBeGreaterThan(0);
    for (const { method, path, operation: op } of isProtected) {
      const where = `${method} ${path}`;
      const responses = op.responses;
      const statuses = needsScope(op) ? ["401", "403", "429"] : ["401", "429"];
      if (!needsScope(op)) expect(responses["403"], where).toBeUndefined();
      for (const status of statuses) {
        // An answer to HEAD has no body (RFC 9110 §9.3.2), so the document gives it none.
        if (method === "head") expect(responses[status], `${where} ${status}`).not.toHaveProperty("content");
        else
          expect(responses[status]?.content?.["application/json"]?.schema, `${where} ${status}`).toEqual({
            $ref: "#/components/schemas/Error",
          });
      }
      expect(
        responses["401"]?.["x-error-codes"]?.map((c) => c.error),
        where,
      ).toEqual([ErrorCodes.MISSING_TOKEN.error, ErrorCodes.INVALID_TOKEN.error]);
      // The change feed's streams are also capped per token and per client address.
      const tooMany = path === "/plants/events" ? [ErrorCodes.TOO_MANY_STREAMS.error] : [];
      expect(
        responses["429"]?.["x-error-codes"]?.map((c) => c.error),
        where,
      ).toEqual([ErrorCodes.RATE_LIMITED.error, ...tooMany]);
      expect(Object.keys(responses["401"]?.headers ?? {}), where).toEqual(["WWW-Authenticate", "Cache-Control"]);
      expect(Object.keys(responses["429"]?.headers ?? {}).sort(), where).toEqual([
        "RateLimit",
        "RateLimit-Policy",
        "Retry-After",
      ]);
      if (needsScope(op)) {
        expect(
          responses["403"]?.["x-error-codes"]?.map((c) => c.error),
          where,
        ).toEqual([ErrorCodes.INSUFFICIENT_SCOPE.error]);
        expect(Object.keys(responses["403"]?.headers ?? {}), where).toEqual(["WWW-Authenticate", "Cache-Control"]);
      }
    }
  });

  it("describes GET /whoami: 200 with the credential, 401 and 429, never 403", () => {
    const responses = operation("/whoami", "get").responses;
    // 400, 408, 414 and 431 are about the request as it arrives (not valid HTTP, too slow, target too long, headers too large).
    expect(Object.keys(responses).sort()).toEqual(["200", "400", "401", "408", "414", "429", "431", "500", "503"]);
    expect(responses["400"]?.["x-error-codes"]?.map((c) => c.error)).toEqual([ErrorCodes.BAD_REQUEST.error]);
    const schema = responses["200"]?.content?.["application/json"]?.schema as { required: string[] };
    expect(schema.required.sort()).toEqual(["expiresAt", "id", "kind", "scopes"]);
  });
});
