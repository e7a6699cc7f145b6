import { join } from "node:path";

import { NEW_PLANT_EXAMPLE } from "@plantstore/schema";
import * as plantStoreServer from "@plantstore/server";
import { startRealServer } from "@plantstore/test-support/real-server";
import newman, { type NewmanRunSummary } from "newman";
import { convertV2 } from "openapi-to-postmanv2";
import { describe, expect, it } from "vitest";

import { cleanEnv, ROOT, runOk } from "./workspace.ts";

/**
 * The served `/openapi.json` as Postman users meet it: converted to a collection by
 * openapi-to-postmanv2 (what Postman's own import runs), with request values taken from the
 * document's examples (the import's "Parameter generation: Example"), then run with newman against
 * a real server. The two variables every generated collection asks for are set: the base URL and
 * the bearer token (one issued by `tokens create`). Every request must get the 2xx its operation
 * documents, in the collection's own order: create, list, read, patch, replace, delete, whoami, each
 * GET followed by its HEAD (the change feed's event stream is left out: see withoutEventStreams; its
 * HEAD, which opens no stream, is run). The one value a user must fill in is `If-Match`: the
 * document's examples are made up, as a real ETag is keyed by the store's own secret, so each write
 * by id sends the `ETag` the answer before it carried (withETagsChained), and the preconditions are
 * really checked on the way (a stale one would be a 412). `PUT` declares both its preconditions, and
 * the run picks one (see replacingNotCreating), as a user of the imported collection does.
 */

type CollectionDefinition = {
  item: unknown[];
  variable?: Array<{ key: string; value: string }>;
  auth?: unknown;
};
type OpenApiOperation = { responses: Record<string, { content?: Record<string, unknown> }> };
type CollectionHeader = { key: string; value: string; disabled?: boolean };
type CollectionItem = {
  item?: CollectionItem[];
  request?: { method: string; url: { path?: string[] }; header?: CollectionHeader[] };
};
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

/**
 * Leaves out the requests of operations that answer an event stream (`text/event-stream`), and
 * returns them: newman reads a response to its end, and a stream has none by design, so such a
 * request could only time out. The stream has its own tests, over HTTP.
 */
function withoutEventStreams(items: CollectionItem[], document: OpenApiDocument, left: string[]): CollectionItem[] {
  return items.flatMap((item) => {
    if (item.item !== undefined) return [{ ...item, item: withoutEventStreams(item.item, document, left) }];
    if (item.request === undefined) return [item];
    const path = `/${item.request.url.path?.join("/") ?? ""}`;
    const operation = document.paths[templateOf(document, path)]?.[item.request.method.toLowerCase()];
    const streamed = Object.keys(operation?.responses["200"]?.content ?? {}).includes("text/event-stream");
    if (!streamed) return [item];
    left.push(`${item.request.method} ${path}`);
    return [];
  });
}

/**
 * `PUT /plants/{id}` replaces with `If-Match` or creates with `If-None-Match: *`, one or the other
 * (400 or 412 with both); the collection, as imported, sends every documented header with its
 * example. This run replaces the plant the chain created, so it unticks `If-None-Match` on the
 * requests that carry both, as a user would, and returns the value it unticked.
 */
function replacingNotCreating(items: CollectionItem[], unticked: string[]): void {
  for (const item of items) {
    if (item.item !== undefined) replacingNotCreating(item.item, unticked);
    const headers = item.request?.header ?? [];
    const ifNoneMatch = headers.find((header) => header.key === "If-None-Match");
    if (item.request?.method !== "PUT" || ifNoneMatch === undefined) continue;
    if (!headers.some((header) => header.key === "If-Match")) continue;
    ifNoneMatch.disabled = true;
    unticked.push(`${item.request.method} If-None-Match: ${ifNoneMatch.value}`);
  }
}

/**
 * Puts `{{etag}}` where the collection sends an `If-Match` example, a collection-level test script
 * that keeps each answer's `ETag` in that variable, and a pre-request script that leaves the header
 * out while no answer has carried one (the read, after a create and a list): what a user fills in,
 * by hand or by script, once the import put the examples there. Returns the examples it replaced,
 * in order.
 */
function withETagsChained(collection: CollectionDefinition, items: CollectionItem[]): string[] {
  const replaced: string[] = [];
  const visit = (item: CollectionItem) => {
    item.item?.forEach(visit);
    for (const header of item.request?.header ?? []) {
      if (header.key !== "If-Match") continue;
      replaced.push(header.value);
      header.value = "{{etag}}";
    }
  };
  items.forEach(visit);
  (collection as CollectionDefinition & { event?: unknown[] }).event = [
    {
      listen: "prerequest",
      script: {
        type: "text/javascript",
        exec: ['if (!pm.collectionVariables.get("etag")) pm.request.headers.remove("If-Match");'],
      },
    },
    {
      listen: "test",
      script: {
        type: "text/javascript",
        exec: ['const etag = pm.response.headers.get("ETag");', 'if (etag) pm.collectionVariables.set("etag", etag);'],
      },
    },
  ];
  collection.variable?.push({ key: "etag", value: "" });
  return replaced;
}

describe("a Postman collection generated from the served /openapi.json, run with newman", () => {
  it("gets every operation's documented 2xx with the examples and ETags answered", { timeout: 60_000 }, async () => {
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

    const streams: string[] = [];
    collection.item = withoutEventStreams(collection.item as CollectionItem[], document, streams);
    expect(streams).toEqual(["GET /plants/events"]);
    const unticked: string[] = [];
    replacingNotCreating(collection.item as CollectionItem[], unticked);
    expect(unticked).toEqual(["PUT If-None-Match: *"]);

    // The document's examples are what the import put in If-Match: the created plant's tag for
    // GET, its HEAD, PATCH and DELETE, the patched one's for PUT.
    const examples = withETagsChained(collection, collection.item as CollectionItem[]);
    const example = (method: string) =>
      (
        document.paths["/plants/{id}"]?.[method] as unknown as {
          parameters: Array<{ name: string; example?: unknown }>;
        }
      ).parameters.find((parameter) => parameter.name === "If-Match")?.example;
    expect(examples).toEqual([example("get"), example("head"), example("patch"), example("put"), example("delete")]);

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
        ifMatch: execution.request.headers.get("If-Match"),
        etag: response.headers.get("ETag"),
        body: response.stream?.toString("utf8") ?? "",
      };
    });
    expect(answered.map(({ request, status }) => [request, status])).toEqual([
      ["POST /plants", 200],
      ["GET /plants", 200],
      ["HEAD /plants", 200],
      ["HEAD /plants/events", 200],
      ["GET /plants/10", 200],
      ["HEAD /plants/10", 200],
      ["PATCH /plants/10", 200],
      ["PUT /plants/10", 200],
      ["DELETE /plants/10", 204],
      ["GET /whoami", 200],
      ["HEAD /whoami", 200],
    ]);
    for (const { request, status, documented2xx, body } of answered) {
      // PUT documents two: 200 when it replaces (as here, with If-Match), 201 when it creates.
      if (request.startsWith("PUT ")) expect(documented2xx, request).toEqual(["200", "201"]);
      else expect(documented2xx, `${request} answered ${status}: ${body}`).toEqual([String(status)]);
    }

    // Each write by id held the ETag the plant had just then: read, patched, replaced back, deleted.
    const answer = (request: string) => answered.find((each) => each.request === request);
    const [read, patch, put, remove] = ["GET", "PATCH", "PUT", "DELETE"].map((method) =>
      answer(`${method} /plants/10`),
    );
    expect(answer("HEAD /plants/10")?.etag).toBe(read!.etag);
    expect(JSON.parse(read!.body)).toEqual(NEW_PLANT_EXAMPLE);
    expect(patch!.ifMatch).toBe(read!.etag);
    expect(JSON.parse(patch!.body)).toEqual({ ...NEW_PLANT_EXAMPLE, tag: "outdoor" });
    expect(put!.ifMatch).toBe(patch!.etag);
    expect(JSON.parse(put!.body)).toEqual(NEW_PLANT_EXAMPLE);
    expect(remove!.ifMatch).toBe(put!.etag);

    // The list's example cursor is a real one: its page starts at the plant the create example made.
    const listed = answered.find(({ request }) => request === "GET /plants");
    expect(JSON.parse(listed!.body)).toEqual([{ id: 10, name: "Monstera", tag: "indoor" }]);
  });
});
