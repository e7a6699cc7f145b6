import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ErrorCodes } from "@plantstore/schema";
import { startTestServer, type TestServer } from "../support/harness.ts";

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

describe("GET /openapi.json on authentication, scopes and rate limits", () => {
  it("names the scope each operation needs in its security requirement, keeping the global one", () => {
    expect((server.served as unknown as { security: unknown }).security).toEqual([{ bearerAuth: [] }]);
    expect(operation("/plants", "post").security).toEqual([{ bearerAuth: ["plants:write"] }]);
    expect(operation("/plants", "get").security).toEqual([{ bearerAuth: ["plants:read"] }]);
    expect(operation("/plants/{id}", "delete").security).toEqual([{ bearerAuth: ["plants:write"] }]);
    expect(operation("/whoami", "get").security).toEqual([{ bearerAuth: [] }]);
    const scheme = (server.served.components as unknown as { securitySchemes: { bearerAuth: Record<string, string> } })
      .securitySchemes.bearerAuth;
    expect(scheme).toMatchObject({ type: "http", scheme: "bearer" });
    expect(scheme["description"]).toMatch(/plants:read.*plants:write/s);
  });

  it("declares 401, 403 and 429 on every protected operation, with the Error body, codes and headers", () => {
    for (const [path, method] of [
      ["/plants", "post"],
      ["/plants", "get"],
      ["/plants/{id}", "delete"],
    ] as const) {
      const responses = operation(path, method).responses;
      for (const status of ["401", "403", "429"]) {
        expect(responses[status]?.content?.["application/json"]?.schema).toEqual({
          $ref: "#/components/schemas/Error",
        });
      }
      expect(responses["401"]?.["x-error-codes"]?.map((c) => c.error)).toEqual([
        ErrorCodes.MISSING_TOKEN.error,
        ErrorCodes.INVALID_TOKEN.error,
      ]);
      expect(responses["403"]?.["x-error-codes"]?.map((c) => c.error)).toEqual([ErrorCodes.INSUFFICIENT_SCOPE.error]);
      expect(responses["429"]?.["x-error-codes"]?.map((c) => c.error)).toEqual([ErrorCodes.RATE_LIMITED.error]);
      expect(Object.keys(responses["401"]?.headers ?? {})).toEqual(["WWW-Authenticate"]);
      expect(Object.keys(responses["403"]?.headers ?? {})).toEqual(["WWW-Authenticate"]);
      expect(Object.keys(responses["429"]?.headers ?? {}).sort()).toEqual([
        "RateLimit",
        "RateLimit-Policy",
        "Retry-After",
      ]);
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
