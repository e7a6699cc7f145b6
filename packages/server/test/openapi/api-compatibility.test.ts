import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { compatibilityVerdict, findBreakingChanges } from "../../scripts/openapi-compat.ts";
import {
  formatDocument,
  pendingBumps,
  readDocument,
  RELEASED_FILE,
  SNAPSHOT_FILE,
} from "../../scripts/openapi-snapshot.ts";
import { startTestServer, type TestServer } from "../support/harness.ts";

type Doc = {
  paths: Record<
    string,
    Record<string, Record<string, unknown> & { responses: Record<string, unknown>; parameters?: unknown[] }>
  >;
  webhooks: Record<string, unknown>;
  components: {
    schemas: Record<string, Record<string, unknown> & { properties?: Record<string, Record<string, unknown>> }>;
  };
};

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

describe("spec/openapi.snapshot.json", () => {
  it("is exactly the document the server serves (after an API change: pnpm --filter @plantstore/server openapi:snapshot)", () => {
    const snapshot = readDocument(SNAPSHOT_FILE);
    // Compared as text too, so the committed file is the formatted one the command writes.
    expect(
      formatDocument(server.served),
      "run `pnpm --filter @plantstore/server openapi:snapshot` and review the diff",
    ).toBe(formatDocument(snapshot));
  });
});

describe("the served document against the last release (spec/openapi.released.json)", () => {
  it("has no breaking change, unless a pending changeset bumps major", async () => {
    const verdict = compatibilityVerdict(
      findBreakingChanges(readDocument(RELEASED_FILE), server.served),
      await pendingBumps(),
    );
    expect(verdict.ok, verdict.report).toBe(true);
  });
});

/** The current snapshot with one deliberate change. */
function changed(edit: (doc: Doc) => void): Doc {
  const doc = structuredClone(readDocument(SNAPSHOT_FILE)) as Doc;
  edit(doc);
  return doc;
}

const base = () => readDocument(SNAPSHOT_FILE);
const breaking = (edit: (doc: Doc) => void) => findBreakingChanges(base(), changed(edit));

describe("findBreakingChanges on deliberately breaking changes", () => {
  it("reports a removed operation, path and webhook", () => {
    expect(breaking((d) => delete d.paths["/plants/{id}"]!["delete"])).toEqual([
      { where: "DELETE /plants/{id}", change: "operation removed" },
    ]);
    expect(breaking((d) => delete d.paths["/plants/{id}"])).toEqual([
      { where: "/plants/{id}", change: "path removed" },
    ]);
    expect(breaking((d) => delete d.webhooks["/plant/webhook"])).toEqual([
      { where: "webhook /plant/webhook", change: "webhook removed" },
    ]);
  });

  it("reports a removed response and a removed response field", () => {
    expect(breaking((d) => delete d.paths["/plants"]!["post"]!.responses["409"])).toEqual([
      { where: "POST /plants 409", change: "response removed" },
    ]);
    const fieldRemoved = breaking((d) => delete d.components.schemas["Plant"]!.properties!["tag"]);
    expect(fieldRemoved).toContainEqual({ where: "POST /plants 200 body.tag", change: "field removed" });
    expect(fieldRemoved).toContainEqual({ where: "GET /plants 200 body[].tag", change: "field removed" });
    // Subscribers receive NewPlant: the webhook payload lost the field too.
    expect(fieldRemoved).toContainEqual({
      where: "POST webhook /plant/webhook request body.tag",
      change: "field removed",
    });
  });

  it("reports a response field that is no longer always present", () => {
    expect(breaking((d) => (d.components.schemas["Plant"]!["required"] = []))).toContainEqual({
      where: "POST /plants 200 body.name",
      change: "field no longer always present",
    });
  });

  it("reports narrowed request types: a lower maxLength, int64 ids narrowed to int32, a type taken away", () => {
    expect(breaking((d) => (d.components.schemas["Plant"]!.properties!["name"]!["maxLength"] = 100))).toContainEqual({
      where: "POST /plants request body.name",
      change: "maxLength lowered from 256 to 100",
    });
    const allOf = (d: Doc) =>
      (
        d.components.schemas["NewPlant"]!["allOf"] as Array<{ properties?: Record<string, Record<string, unknown>> }>
      )[1]!;
    expect(breaking((d) => (allOf(d).properties!["id"]!["format"] = "int32"))).toContainEqual({
      where: "POST /plants request body.id",
      change: "format narrowed from int64 to int32",
    });
    expect(breaking((d) => (d.components.schemas["Plant"]!.properties!["tag"]!["type"] = "integer"))).toContainEqual({
      where: "POST /plants request body.tag",
      change: "no longer accepts type string",
    });
  });

  it("reports a widened response type", () => {
    expect(
      breaking((d) => (d.components.schemas["Error"]!.properties!["error"]!["type"] = ["integer", "string"])),
    ).toContainEqual({
      where: "POST /plants 400 body.error",
      change: "may now be of type string",
    });
  });

  it("reports a new required request field and a new required parameter", () => {
    const added = breaking((d) => {
      const own = (
        d.components.schemas["NewPlant"]!["allOf"] as Array<{ required: string[]; properties: Record<string, unknown> }>
      )[1]!;
      own.required.push("color");
      own.properties["color"] = { type: "string" };
    });
    expect(added).toContainEqual({ where: "POST /plants request body.color", change: "new required field" });
    expect(
      breaking((d) =>
        d.paths["/plants"]!["get"]!.parameters!.push({
          in: "query",
          name: "sort",
          required: true,
          schema: { type: "string" },
        }),
      ),
    ).toEqual([{ where: "GET /plants query sort parameter", change: "new required parameter" }]);
  });

  it("reports enum values removed from what callers send, and added to what they receive", () => {
    const withEnum = changed((d) => (d.components.schemas["Plant"]!.properties!["tag"]!["enum"] = ["fern", "moss"]));
    const fewer = structuredClone(withEnum);
    fewer.components.schemas["Plant"]!.properties!["tag"]!["enum"] = ["fern"];
    expect(findBreakingChanges(withEnum, fewer)).toContainEqual({
      where: "POST /plants request body.tag",
      change: 'no longer accepts the value "moss"',
    });
    const more = structuredClone(withEnum);
    more.components.schemas["Plant"]!.properties!["tag"]!["enum"] = ["fern", "moss", "ivy"];
    expect(findBreakingChanges(withEnum, more)).toContainEqual({
      where: "POST /plants 200 body.tag",
      change: 'may now be the new value "ivy"',
    });
  });

  it("reports authentication newly required on an operation that had none", () => {
    const open = changed((d) => (d.paths["/plants"]!["get"]!["security"] = []));
    expect(findBreakingChanges(open, base())).toEqual([
      { where: "GET /plants", change: "now requires authentication" },
    ]);
  });
});

describe("findBreakingChanges on a parameter or field that becomes a choice (anyOf/oneOf), or stops being one", () => {
  const int64 = { type: "integer", format: "int64" };
  const withAfter = (schema: Record<string, unknown>) =>
    changed((d) => {
      const after = d.paths["/plants"]!["get"]!.parameters!.find((p) => (p as { name: string }).name === "after") as {
        schema: unknown;
      };
      after.schema = schema;
    });
  const where = "GET /plants query after parameter";

  it("reports an int64 `after` turned into a string: a client generated from the old document sends a number", () => {
    expect(findBreakingChanges(withAfter(int64), withAfter({ type: "string" }))).toEqual([
      { where, change: "no longer accepts type integer" },
    ]);
  });

  it("lets an int64 `after` become a choice of an opaque string and the same int64 (what GET /plants did)", () => {
    expect(
      findBreakingChanges(withAfter(int64), withAfter({ anyOf: [{ type: "string", minLength: 1 }, int64] })),
    ).toEqual([]);
    expect(
      findBreakingChanges(withAfter(int64), withAfter({ oneOf: [int64, { type: "string" }], description: "either" })),
    ).toEqual([]);
  });

  it("reports a choice none of whose alternatives accepts what the one schema did", () => {
    expect(
      findBreakingChanges(
        withAfter(int64),
        withAfter({ anyOf: [{ type: "string" }, { type: "integer", format: "int32" }] }),
      ),
    ).toEqual([
      {
        where,
        change:
          "no anyOf alternative accepts what was accepted before (no longer accepts type integer; format narrowed from int64 to int32)",
      },
    ]);
  });

  it("reports a choice narrowed back to one of its alternatives, for what callers send", () => {
    expect(findBreakingChanges(withAfter({ anyOf: [{ type: "string" }, int64] }), withAfter(int64))).toEqual([
      { where, change: "no longer accepts type string" },
      { where, change: "format narrowed from none to int64" },
    ]);
  });

  it("reports a response field that may now be of a new alternative type, and lets one narrowed to an alternative through", () => {
    // GET /whoami's `id` appears only in an answer, so narrowing it breaks no one.
    const idAs = (schema: Record<string, unknown>) =>
      changed((d) => {
        const answer = d.paths["/whoami"]!["get"]!.responses["200"] as {
          content: Record<string, { schema: { properties: Record<string, unknown> } }>;
        };
        answer.content["application/json"]!.schema.properties["id"] = schema;
      });
    expect(
      findBreakingChanges(idAs({ type: "string" }), idAs({ anyOf: [{ type: "string" }, { type: "integer" }] })),
    ).toEqual([{ where: "GET /whoami 200 body.id", change: "may now be of type integer" }]);
    expect(
      findBreakingChanges(idAs({ anyOf: [{ type: "string" }, { type: "integer" }] }), idAs({ type: "string" })),
    ).toEqual([]);
  });
});

describe("findBreakingChanges on compatible changes", () => {
  it("finds nothing between a document and itself", () => {
    expect(findBreakingChanges(base(), base())).toEqual([]);
  });

  it("lets additions through: an operation, an optional field, an optional parameter, a response, a webhook, new words", () => {
    const added = changed((d) => {
      // GET /plants/{id} was this test's new operation until issue 26 added it; a photo is not there yet.
      d.paths["/plants/{id}/photo"] = {
        get: { operationId: "getPlantPhoto", responses: { "200": { description: "The photo" } } },
      };
      d.components.schemas["Plant"]!.properties!["color"] = { type: "string" };
      d.paths["/plants"]!["get"]!.parameters!.push({ in: "query", name: "sort", schema: { type: "string" } });
      // A status the document does not list yet (429 is listed since rate limits came).
      d.paths["/plants"]!["post"]!.responses["406"] = {
        description: "Not acceptable",
        content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } },
      };
      d.webhooks["/plant/deleted"] = structuredClone(d.webhooks["/plant/webhook"]);
      (d as unknown as { info: { description: string } }).info.description = "Reworded.";
    });
    expect(findBreakingChanges(base(), added)).toEqual([]);
  });

  it("lets what callers send accept more (a higher maxLength), but not less", () => {
    const doc = (maxLength: number) => ({
      openapi: "3.1.0",
      paths: {
        "/notes": {
          post: {
            requestBody: {
              required: true,
              content: {
                "application/json": { schema: { type: "object", properties: { text: { type: "string", maxLength } } } },
              },
            },
            responses: { "204": { description: "Stored" } },
          },
        },
      },
    });
    expect(findBreakingChanges(doc(10), doc(20))).toEqual([]);
    expect(findBreakingChanges(doc(20), doc(10))).toEqual([
      { where: "POST /notes request body.text", change: "maxLength lowered from 20 to 10" },
    ]);
  });
});

describe("compatibilityVerdict", () => {
  const change = [{ where: "DELETE /plants/{id}", change: "operation removed" }];
  it("refuses a breaking change without a pending major changeset, naming it and the way out", () => {
    const verdict = compatibilityVerdict(change, ["minor", "patch"]);
    expect(verdict.ok).toBe(false);
    expect(verdict.report).toContain("DELETE /plants/{id}: operation removed");
    expect(verdict.report).toContain("pnpm changeset");
  });
  it("accepts it with a pending major changeset, and accepts no change at all", () => {
    expect(compatibilityVerdict(change, ["minor", "major"]).ok).toBe(true);
    expect(compatibilityVerdict([], []).ok).toBe(true);
  });
});

describe("pendingBumps", () => {
  it("reads the bump of every changeset in .changeset/", async () => {
    const root = mkdtempSync(join(tmpdir(), "plantstore-changesets-"));
    try {
      mkdirSync(join(root, ".changeset"));
      writeFileSync(join(root, ".changeset", "config.json"), "{}\n");
      writeFileSync(
        join(root, ".changeset", "big-change.md"),
        '---\n"@plantstore/server": major\n---\n\nRemoved DELETE /plants/{id}.\n',
      );
      writeFileSync(join(root, ".changeset", "small-fix.md"), '---\n"@plantstore/client": patch\n---\n\nA fix.\n');
      expect((await pendingBumps(root)).sort()).toEqual(["major", "patch"]);
    } finally {
      rmSync(root, { recursive: true, force: true });
    }
  });
});
