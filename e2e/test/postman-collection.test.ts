import { join } from "node:path";

import * as plantStoreServer from "@plantstore/server";
import { startRealServer } from "@plantstore/test-support/real-server";
import newman, { type NewmanRunSummary } from "newman";
import { convertV2 } from "openapi-to-postmanv2";
import { describe, expect, it } from "vitest";

import { cleanEnv, ROOT, runOk } from "./workspace.ts";

/**
 * The served `/openapi.json` as Postman users meet it: converted to a collection by
 * openapi-to-postmanv2 (what Postman's own import runs), with request values taken from the
 * document's examples (the import's "Parameter generation: Example"), then run as-is with newman
 * against a real server. Only the two variables every generated collection asks for are set: the
 * base URL and the bearer token (one issued by `tokens create`). Every request must get the 2xx its
 * operation documents, in the collection's own order: create, list, delete, whoami.
 */

type CollectionDefinition = {
  item: unknown[];
  variable?: Array<{ key: string; value: string }>;
  auth?: unknown;
};
type OpenApiOperation = { responses: Record<string, unknown> };
type OpenApiDocument = { paths: Record<string, Record<string, OpenApiOperation>> };

function convert(document: string): Promise<CollectionDefinition> {
  return new Promise((resolve, reject) => {
    convertV2({ type: "string", data: document }, { parametersResolution: "Example" }, (error, result) => {
      if (error !== null && error !== undefined) return reject(new Error(String(error.message ?? error)));
      if (!result?.result) return reject(new Error(`openapi-to-postmanv2 refused the document: ${result?.reason}`));
      resolve(result.output?.[0]?.data as CollectionDefinition);
    });
  });
}

function runCollection(collection: CollectionDefinition): Promise<NewmanRunSummary> {
  return new Promise((resolve, reject) => {
    // No reporters: the test reads the summary; newman sends nothing anywhere but the requests.
    newman.run({ collection: collection as never, reporters: [], timeoutRequest: 10_000 }, (error, summary) =>
      error === null ? resolve(summary) : reject(error),
    );
  });
}

/** `/plants/10` → the document's `/plants/{id}`. */
function templateOf(document: OpenApiDocument, path: string): string {
  if (path in document.paths) return path;
  const template = Object.keys(document.paths).find((candidate) =>
    new RegExp(`^${candidate.replace(/\{[^}]+\}/g, "[^/]+")}$`).test(path),
  );
  if (template === undefined) throw new Error(`no path of the document matches ${path}`);
  return template;
}

describe("a Postman collection generated from the served /openapi.json, run with newman", () => {
  it("gets every operation's documented 2xx with the document's examples alone", { timeout: 60_000 }, async () => {
    await using server = await startRealServer(plantStoreServer);
    const served = await fetch(`${server.url}/openapi.json`);
    expect(served.status).toBe(200);
    const text = await served.text();
    const document = JSON.parse(text) as OpenApiDocument;

    const token = (
      await runOk(
        process.execPath,
        [
          join(ROOT, "packages/server/dist/bin.js"),
          "tokens",
          "create",
          "--name",
          "postman",
          "--scopes",
          "plants:read,plants:write",
        ],
        { cwd: ROOT, env: cleanEnv({ DATABASE_URL: server.databaseUrl }) },
      )
    ).trim();
    expect(token).toMatch(/^ps_/);

    const collection = await convert(text);
    // The converter asks for these two and nothing else: what a user fills in after the import.
    expect(collection.variable?.map((variable) => variable.key)).toEqual(["baseUrl"]);
    expect(JSON.stringify(collection.auth)).toContain("{{bearerToken}}");
    collection.variable = [
      { key: "baseUrl", value: server.url },
      { key: "bearerToken", value: token },
    ];

    const summary = await runCollection(collection);
    expect(summary.run.failures).toEqual([]);
    const answered = summary.run.executions.map((execution) => {
      const path = `/${execution.request.url.path?.join("/") ?? ""}`;
      const method = execution.request.method;
      const response = execution.response;
      const documented2xx = Object.keys(
        document.paths[templateOf(document, path)]?.[method.toLowerCase()]?.responses ?? {},
      ).filter((status) => status.startsWith("2"));
      return {
        request: `${method} ${path}`,
        status: response.code,
        documented2xx,
        body: response.stream?.toString("utf8") ?? "",
      };
    });
    expect(answered.map(({ request, status }) => [request, status])).toEqual([
      ["POST /plants", 200],
      ["GET /plants", 200],
      ["DELETE /plants/10", 204],
      ["GET /whoami", 200],
    ]);
    for (const { request, status, documented2xx, body } of answered)
      expect(documented2xx, `${request} answered ${status}: ${body}`).toEqual([String(status)]);

    // The list's example cursor is a real one: its page starts at the plant the create example made.
    const listed = answered.find(({ request }) => request === "GET /plants");
    expect(JSON.parse(listed!.body)).toEqual([{ id: 10, name: "Monstera", tag: "indoor" }]);
  });
});
