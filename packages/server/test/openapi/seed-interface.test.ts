import { existsSync, readFileSync } from "node:fs";

import { ErrorCodes } from "@plantstore/schema";
import { ResponseContract } from "@plantstore/test-support/response-contract";
import { seedDocument, sharedSeedUrl, vendoredSeedUrl } from "@plantstore/test-support/seed-document";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { startTestServer, type TestServer } from "../support/harness.ts";
import { concretePath, documentedOperations, routerOperations } from "../support/operations.ts";

/** The server package's version: the document's `info.version` is read from there. */
const serverVersion = (
  JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }
).version;

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

/**
 * Every detail the seed shows must be in the served document unchanged: objects may gain keys,
 * `required` lists compare as sets, everything else compares exactly. Returns the differences.
 */
function missingDetails(seed: unknown, served: unknown, path = "$"): string[] {
  // The seed's version is the one it was written at; the served one is the package's and moves
  // with every release (checked in "describes the interface" below).
  if (path === "$.info.version") return [];
  if (Array.isArray(seed)) {
    if (!Array.isArray(served)) return [`${path}: expected an array`];
    if (path.endsWith(".required")) {
      return seed.filter((k) => !served.includes(k)).map((k) => `${path}: missing required ${String(k)}`);
    }
    if (seed.length !== served.length) return [`${path}: expected ${seed.length} items, got ${served.length}`];
    return seed.flatMap((item, i) => missingDetails(item, served[i], `${path}[${i}]`));
  }
  if (typeof seed === "object" && seed !== null) {
    if (typeof served !== "object" || served === null) return [`${path}: expected an object`];
    return Object.entries(seed).flatMap(([key, value]) =>
      key in served
        ? missingDetails(value, (served as Record<string, unknown>)[key], `${path}.${key}`)
        : [`${path}.${key}: missing`],
    );
  }
  return seed === served ? [] : [`${path}: expected ${JSON.stringify(seed)}, got ${JSON.stringify(served)}`];
}

describe("the seed interface", () => {
  it("is vendored in @plantstore/test-support unchanged from ../shared/seed", () => {
    const vendored = readFileSync(vendoredSeedUrl, "utf8");
    if (existsSync(sharedSeedUrl))
      expect(JSON.parse(vendored)).toEqual(JSON.parse(readFileSync(sharedSeedUrl, "utf8")));
    expect(JSON.parse(vendored)).toEqual(seedDocument);
  });
});

describe("GET /openapi.json", () => {
  it("keeps every detail the seed interface shows", () => {
    expect(missingDetails(seedDocument, server.served)).toEqual([]);
  });

  it("finds a difference when one is there (the comparison can fail)", () => {
    const broken = structuredClone(server.served) as unknown as {
      components: { schemas: { Plant: { required: string[] } } };
    };
    broken.components.schemas.Plant.required = [];
    expect(missingDetails(seedDocument, broken)).toContain(
      "$.components.schemas.Plant.required: missing required name",
    );
  });

  it("describes the interface: title, licence, version, global bearer auth", () => {
    const doc = server.served as unknown as Record<string, unknown>;
    expect(doc["openapi"]).toBe("3.1.0");
    expect(doc["info"]).toMatchObject({
      title: "OpenAPI Plant Store",
      license: { name: "MIT" },
      version: serverVersion,
    });
    expect(serverVersion).toMatch(/^\d+\.\d+\.\d+/);
    expect(doc["security"]).toEqual([{ bearerAuth: [] }]);
  });

  it("declares every error status POST /plants can answer, each with the Error schema", () => {
    const responses = server.served.paths["/plants"]?.["post"]?.responses ?? {};
    for (const status of ["400", "401", "403", "409", "413", "415", "500", "503"]) {
      expect(responses[status]?.content?.["application/json"]?.schema).toEqual({ $ref: "#/components/schemas/Error" });
    }
    expect(responses["400"]).toMatchObject({ description: "Unexpected error" });
  });

  it("declares 408, 414 and 431 on every operation, each by reference to one shared response with the Error schema", () => {
    const doc = server.served as unknown as {
      paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
      components: { responses: Record<string, { content: unknown; "x-error-codes": Array<{ error: number }> }> };
    };
    const responses = doc.components.responses;
    const codes = Object.fromEntries(
      Object.entries(responses).map(([name, r]) => [name, r["x-error-codes"].map((c) => c.error)]),
    );
    expect(codes).toEqual({
      RequestTimeout: [ErrorCodes.REQUEST_TIMEOUT.error],
      UriTooLong: [ErrorCodes.URI_TOO_LONG.error],
      RequestHeaderFieldsTooLarge: [ErrorCodes.HEADERS_TOO_LARGE.error],
    });
    for (const response of Object.values(responses)) {
      expect(response.content).toEqual({ "application/json": { schema: { $ref: "#/components/schemas/Error" } } });
    }
    const operations = documentedOperations<{ responses: Record<string, unknown> }>(doc).map((o) => o.operation);
    expect(operations).toHaveLength(routerOperations().length);
    for (const operation of operations) {
      expect(operation.responses["408"]).toEqual({ $ref: "#/components/responses/RequestTimeout" });
      expect(operation.responses["414"]).toEqual({ $ref: "#/components/responses/UriTooLong" });
      expect(operation.responses["431"]).toEqual({ $ref: "#/components/responses/RequestHeaderFieldsTooLarge" });
    }
  });

  it("says which paths answer outside the operations, and that others answer 404, or 405 with Allow", () => {
    const { description } = (server.served as unknown as { info: { description: string } }).info;
    for (const path of ["/openapi.json", "/docs", "/healthz", "/readyz", "/metrics"])
      expect(description).toContain(`\`${path}\``);
    expect(description).toMatch(/other path answers 404 .*40400/s);
    expect(description).toMatch(/405 .*40500.*`Allow`.*`HEAD` wherever `GET` is/s);
  });

  it("names a server relative to where it is served, tags, and a summary on every operation", () => {
    const doc = server.served as unknown as {
      servers: Array<{ url: string }>;
      tags: Array<{ name: string }>;
      info: { license: Record<string, string> };
      paths: Record<string, Record<string, { summary?: string; tags?: string[] }>>;
    };
    expect(doc.servers.map((s) => s.url)).toEqual(["/"]);
    expect(doc.info.license).toEqual({ name: "MIT", identifier: "MIT" });
    const tags = new Set(doc.tags.map((t) => t.name));
    for (const operation of Object.values(doc.paths).flatMap((item) => Object.values(item))) {
      expect(operation.summary).toMatch(/^[A-Z]/);
      for (const tag of operation.tags ?? []) expect(tags).toContain(tag);
      expect(operation.tags).toHaveLength(1);
    }
  });

  it("lists the catalogue codes each status carries", () => {
    const responses = server.served.paths["/plants"]?.["post"]?.responses as Record<
      string,
      { "x-error-codes": Array<{ error: number }> }
    >;
    expect(responses["409"]?.["x-error-codes"].map((c) => c.error)).toEqual([ErrorCodes.ID_CONFLICT.error]);
    expect(responses["400"]?.["x-error-codes"].map((c) => c.error)).toContain(ErrorCodes.VALIDATION_FAILED.error);
  });

  it("names the components Plant, NewPlant and Error with int64/int32 formats, beside the event stream's", () => {
    const schemas = server.served.components.schemas as Record<string, Record<string, unknown>>;
    // Beside the seed's three: PlantPatch (the body of PATCH /plants/{id}) and the change feed's events.
    expect(Object.keys(schemas).sort()).toEqual([
      "Error",
      "FeedResetData",
      "FeedResetEvent",
      "NewPlant",
      "Plant",
      "PlantCreatedEvent",
      "PlantDeletedData",
      "PlantDeletedEvent",
      "PlantEvent",
      "PlantPatch",
      "PlantUpdatedEvent",
    ]);
    expect(JSON.stringify(schemas["NewPlant"])).toContain('"format":"int64"');
    expect(JSON.stringify(schemas["Error"])).toContain('"format":"int32"');
  });
});

describe("the response contract checker", () => {
  it("refuses a 200 whose body is not a Plant", () => {
    const contract = new ResponseContract("seed", seedDocument, { errorFallback: true });
    expect(() => contract.check("POST", "/plants", 200, "application/json", '{"tag":"x"}')).toThrow(/fails/);
    expect(() => contract.check("POST", "/plants", 400, "application/json", '{"error":"x","message":"m"}')).toThrow(
      /fails/,
    );
    expect(() => contract.check("POST", "/plants", 400, "text/plain", "oops")).toThrow(/Content-Type/);
  });

  it("checks a 408 or 431 against the shared response the operation refers to", () => {
    const contract = new ResponseContract("served", server.served, { errorFallback: false });
    // An answer to HEAD has no body to check (the next test).
    const operations = documentedOperations(server.served).filter(({ method }) => method !== "head");
    expect(operations.length).toBeGreaterThan(0);
    for (const { method: lower, path: template } of operations) {
      const [method, path] = [lower.toUpperCase(), concretePath(template)];
      contract.check(
        method,
        path,
        431,
        "application/json",
        '{"error":43100,"message":"the request headers are too large"}',
      );
      contract.check(
        method,
        path,
        408,
        "application/json",
        '{"error":40800,"message":"the request did not arrive in time"}',
      );
      expect(() => contract.check(method, path, 431, "application/json", '{"message":"m"}')).toThrow(/fails/);
    }
  });

  it("checks the status of an answer to HEAD against its HEAD operation, and no body", () => {
    const contract = new ResponseContract("served", server.served, { errorFallback: false });
    contract.check("HEAD", "/plants/7", 304, null, "");
    contract.check("HEAD", "/plants/7", 404, null, "");
    expect(() => contract.check("HEAD", "/plants/7", 201, null, "")).toThrow(/HEAD \/plants\/7 answered 201/);
  });

  it("refuses a status the served document does not declare", () => {
    const contract = new ResponseContract("served", server.served, { errorFallback: false });
    expect(() => contract.check("POST", "/plants", 418, "application/json", '{"error":1,"message":"m"}')).toThrow(
      /does not declare/,
    );
  });
});
