import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { pathToFileURL } from "node:url";

import { createClient as generateHeyApiClient } from "@hey-api/openapi-ts";
import * as plantStoreServer from "@plantstore/server";
import { type RealServer, startRealServer } from "@plantstore/test-support/real-server";
import { TEST_TOKEN } from "@plantstore/test-support/test-config";
import openapiTS, { astToString } from "openapi-typescript";
import generateOrval from "orval";
import ts from "typescript";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { codeBlocks, readme, section } from "./readme-support.ts";
import { cleanEnv, runOk } from "./workspace.ts";

/**
 * Clients generated from the served `/openapi.json` the way most users get one: openapi-typescript
 * types with openapi-fetch, @hey-api/openapi-ts, and orval's fetch client. On each run they are
 * generated into a scratch project, type-checked there under `strict` with `nodenext` resolution
 * together with the code that uses them (e2e/interop/), and run against a real server: create,
 * replay, conflict, list, every page through `Link`, read one with its ETag, patch it with
 * `If-Match` and be refused with a stale one, create by `PUT`, delete, with ids around 2^53 and at
 * the int64 bounds; the merge-patch call of each generator as the document and the client README
 * show it; and the event stream typed as its text, read through orval without waiting for its end.
 */

const require = createRequire(import.meta.url);
const INTEROP = new URL("../interop/", import.meta.url);
const TSC = join(dirname(require.resolve("typescript/package.json")), "bin", "tsc");
const INT64_MAX = 2n ** 63n - 1n;
const INT64_MIN = -(2n ** 63n);
const TWO_TO_53 = 2n ** 53n;

type Id = number | bigint;
type NewPlant = { id: Id; name: string; tag?: string };
type Outcome = { status: number; plant?: { name: string; tag?: string }; error?: { error: number; message: string } };
type Versioned = { status: number; plant?: NewPlant; etag: string | null; error?: { error: number; message: string } };

/** The parts of e2e/interop/openapi-fetch-client.ts the tests call (its own types live beside the generated code). */
type OpenapiFetchClient = {
  plantStore(baseUrl: string, token: string, options: { exact: boolean }): unknown;
  createPlant(store: unknown, plant: NewPlant): Promise<Outcome>;
  deletePlant(store: unknown, id: Id): Promise<Outcome>;
  getPlant(store: unknown, id: Id): Promise<Versioned>;
  createWithPut(
    store: unknown,
    id: Id,
    plant: { name: string; tag?: string },
  ): Promise<Created & { plant?: NewPlant; error?: { error: number } }>;
  updatePlant(
    store: unknown,
    id: Id,
    patch: { name?: string; tag?: string | null },
    ifMatch: string,
  ): Promise<Versioned>;
  listPage(
    store: unknown,
    query: { tag?: string; limit?: number; after?: string | Id },
    options: { exact: boolean },
  ): Promise<{ plants: NewPlant[]; next: string | undefined }>;
  walkPages(
    store: unknown,
    query: { tag?: string; limit?: number },
    options: { exact: boolean },
  ): Promise<NewPlant[][]>;
};
/** The same of e2e/interop/hey-api-client.ts. */
type HeyApiClient = {
  plantStore(baseUrl: string, token: string): unknown;
  create(client: unknown, plant: NewPlant): Promise<Outcome>;
  createWithPut(client: unknown, id: bigint, plant: { name: string; tag?: string }): Promise<Created>;
  remove(client: unknown, id: bigint): Promise<Outcome>;
  walkPages(client: unknown, query: { tag?: string; limit?: number }): Promise<NewPlant[][]>;
};
type Created = { status: number; location?: string | null; etag?: string | null };
/** The same of e2e/interop/orval-client.ts and stream-types.ts. */
type OrvalClient = {
  connectPlantStore(baseUrl: string, token: string): void;
  watchOpening(): Promise<{ status: number; contentType: string | null; text: string | undefined }>;
  createWithPut(id: number, plant: { name: string; tag?: string }): Promise<Created>;
};
/** The merge-patch call of each generator, as shown, wrapped into a function (see patchModules). */
type PatchModules = {
  openapiFetch: { patch(client: unknown, id: Id, etag: string): Promise<number> };
  openapiFetchWithoutMediaType: { patch(client: unknown, id: Id, etag: string): Promise<number> };
  heyApi: { patch(client: unknown, id: bigint, etag: string): Promise<number | undefined> };
  orval: { patch(id: number, etag: string): Promise<number> };
};

let server: RealServer<plantStoreServer.RunningServer>;
let project: string;
let openapiFetch: OpenapiFetchClient;
let heyApi: HeyApiClient;
let orval: OrvalClient;
let patches: PatchModules;
let patchDescription: string;

type Generator = "openapi-fetch" | "@hey-api/openapi-ts" | "orval";

/** The `ts` blocks of a piece of Markdown, by the generator their first comment names. */
function callsByGenerator(markdown: string): Record<Generator, string> {
  const blocks = codeBlocks(markdown, "ts");
  const named = (generator: string) => {
    const found = blocks.filter((block) => block.startsWith(`// ${generator} `));
    if (found.length !== 1) throw new Error(`${found.length} blocks for ${generator}, not one`);
    return found[0]!;
  };
  return {
    "openapi-fetch": named("openapi-fetch"),
    "@hey-api/openapi-ts": named("@hey-api/openapi-ts"),
    orval: named("orval"),
  };
}

/** The client README's section on generated clients. */
const readmeCalls = () =>
  callsByGenerator(section(readme("packages/client/README.md"), "Clients generated from `/openapi.json`"));

/**
 * Each generator's merge-patch call from the README, as a function of the names it uses (`client`,
 * `id`, `etag`) returning the answer's status, written beside the generated code so that tsc checks
 * it with the rest; and openapi-fetch's once more without its `Content-Type`, to show why it is there.
 */
function patchModules(): Record<keyof PatchModules, string> {
  const calls = readmeCalls();
  const body = (call: string, status: string) => `${call.trimEnd().replace(/^/gm, "  ")}\n  return ${status};\n}\n`;
  const openapiFetchHead =
    'import type { PlantStore } from "./openapi-fetch-client.js";\n\n' +
    "export async function patch(client: PlantStore, id: number | bigint, etag: string): Promise<number> {\n";
  const withoutMediaType = calls["openapi-fetch"].replace(/^ *headers: \{ "Content-Type": .*\n/m, "");
  if (withoutMediaType === calls["openapi-fetch"]) throw new Error("the openapi-fetch call names no Content-Type");
  return {
    openapiFetch: openapiFetchHead + body(calls["openapi-fetch"], "patched.response.status"),
    openapiFetchWithoutMediaType: openapiFetchHead + body(withoutMediaType, "patched.response.status"),
    heyApi:
      'import { updatePlant } from "./generated/hey-api/sdk.gen.js";\n' +
      'import type { PlantStore } from "./hey-api-client.js";\n\n' +
      "export async function patch(client: PlantStore, id: bigint, etag: string): Promise<number | undefined> {\n" +
      body(calls["@hey-api/openapi-ts"], "patched.response?.status"),
    orval:
      'import { updatePlant } from "./generated/orval.js";\n\n' +
      "export async function patch(id: number, etag: string): Promise<number> {\n" +
      body(calls.orval, "patched.status"),
  };
}

/** openapi-typescript's documented `transform` for int64 as `number | bigint` (its default is `number`). */
const int64AsNumberOrBigint: Parameters<typeof openapiTS>[1] = {
  transform: (schema) =>
    schema.format === "int64"
      ? ts.factory.createUnionTypeNode([
          ts.factory.createKeywordTypeNode(ts.SyntaxKind.NumberKeyword),
          ts.factory.createKeywordTypeNode(ts.SyntaxKind.BigIntKeyword),
        ])
      : undefined,
};

beforeAll(async () => {
  server = await startRealServer(plantStoreServer);
  const served = await fetch(`${server.url}/openapi.json`);
  expect(served.status).toBe(200);
  const document = (await served.json()) as Record<string, unknown>;

  project = mkdtempSync(join(tmpdir(), "plantstore-generated-clients-"));
  cpSync(INTEROP, project, { recursive: true });
  writeFileSync(join(project, "package.json"), '{ "type": "module", "private": true }\n');
  writeFileSync(join(project, "openapi.json"), JSON.stringify(document));
  const paths = document["paths"] as Record<string, Record<string, { description: string }>>;
  patchDescription = paths["/plants/{id}"]!["patch"]!.description;
  for (const [name, source] of Object.entries(patchModules())) writeFileSync(join(project, `patch-${name}.ts`), source);
  // The runtime the generated code imports, as a user's project would have it installed.
  mkdirSync(join(project, "node_modules"));
  symlinkSync(
    dirname(require.resolve("openapi-fetch/package.json")),
    join(project, "node_modules", "openapi-fetch"),
    "dir",
  );

  const generated = join(project, "generated");
  mkdirSync(generated);
  writeFileSync(join(generated, "openapi-typescript.ts"), astToString(await openapiTS(document as never)));
  writeFileSync(
    join(generated, "openapi-typescript-bigint.ts"),
    astToString(await openapiTS(document as never, int64AsNumberOrBigint)),
  );
  await generateHeyApiClient({
    input: join(project, "openapi.json"),
    // Read the project's tsconfig as a user's run would: nodenext, so imports carry `.js`.
    output: { path: join(generated, "hey-api"), tsConfigPath: join(project, "tsconfig.json") },
    plugins: [
      "@hey-api/client-fetch",
      { name: "@hey-api/transformers", bigInt: true },
      { name: "@hey-api/sdk", transformer: true },
    ],
    logs: { level: "silent" },
  });
  // orval's fetch client, calling the custom fetch a user writes for the base URL and token.
  await generateOrval(
    {
      input: { target: join(project, "openapi.json") },
      output: {
        target: join(generated, "orval.ts"),
        client: "fetch",
        mode: "single",
        override: { mutator: { path: join(project, "orval-fetch.ts"), name: "plantStoreFetch" } },
      },
    },
    project,
    { logLevel: "error", throwOnError: true },
  );

  await runOk(process.execPath, [TSC, "-p", join(project, "tsconfig.json")], {
    cwd: project,
    env: cleanEnv(),
    timeoutMs: 120_000,
  });
  openapiFetch = (await import(pathToFileURL(join(project, "openapi-fetch-client.ts")).href)) as OpenapiFetchClient;
  heyApi = (await import(pathToFileURL(join(project, "hey-api-client.ts")).href)) as HeyApiClient;
  orval = (await import(pathToFileURL(join(project, "orval-client.ts")).href)) as OrvalClient;
  orval.connectPlantStore(server.url, TEST_TOKEN);
  const load = async (name: keyof PatchModules) =>
    (await import(pathToFileURL(join(project, `patch-${name}.ts`)).href)) as PatchModules[typeof name];
  patches = {
    openapiFetch: (await load("openapiFetch")) as PatchModules["openapiFetch"],
    openapiFetchWithoutMediaType: (await load("openapiFetchWithoutMediaType")) as PatchModules["openapiFetch"],
    heyApi: (await load("heyApi")) as PatchModules["heyApi"],
    orval: (await load("orval")) as PatchModules["orval"],
  };
}, 180_000);

afterAll(async () => {
  await server?.close();
  if (project !== undefined) rmSync(project, { recursive: true, force: true });
});

describe("the generated code", () => {
  it("is what the generators write from the served document, and type-checks strict under nodenext", () => {
    expect(readdirSync(join(project, "generated")).sort()).toEqual([
      "hey-api",
      "openapi-typescript-bigint.ts",
      "openapi-typescript.ts",
      "orval.ts",
    ]);
    expect(readdirSync(join(project, "generated", "hey-api"))).toEqual(
      expect.arrayContaining(["sdk.gen.ts", "types.gen.ts"]),
    );
  });
});

const ids = (plants: NewPlant[]) => plants.map((plant) => BigInt(plant.id));
const range = (from: bigint, count: number) => Array.from({ length: count }, (_, i) => from + BigInt(i));

describe("a client from openapi-typescript + openapi-fetch, reading and writing ids exactly", () => {
  const store = () => openapiFetch.plantStore(server.url, TEST_TOKEN, { exact: true });
  const edges = [INT64_MIN, TWO_TO_53 - 1n, TWO_TO_53, TWO_TO_53 + 1n, INT64_MAX];

  it("creates, replays and is refused a conflict, with ids around 2^53 and at the int64 bounds", async () => {
    for (const id of edges) {
      const plant = { id, name: `Fern ${id}`, tag: "ofetch-edge" };
      await expect(openapiFetch.createPlant(store(), plant)).resolves.toEqual({
        status: 200,
        plant: { name: plant.name, tag: "ofetch-edge" },
      });
      await expect(openapiFetch.createPlant(store(), plant)).resolves.toEqual({
        status: 200,
        plant: { name: plant.name, tag: "ofetch-edge" },
      });
      const conflict = await openapiFetch.createPlant(store(), { ...plant, name: "Moss" });
      expect(conflict).toMatchObject({ status: 409, error: { error: 40900 } });
    }
  });

  it("lists them exactly, ordered by id, and takes a decimal id as `after` too", async () => {
    const page = await openapiFetch.listPage(store(), { tag: "ofetch-edge", limit: 10 }, { exact: true });
    expect(ids(page.plants)).toEqual(edges);
    expect(page.next).toBeUndefined();
    const afterId = await openapiFetch.listPage(store(), { tag: "ofetch-edge", after: TWO_TO_53 }, { exact: true });
    expect(ids(afterId.plants)).toEqual([TWO_TO_53 + 1n, INT64_MAX]);
  });

  it("walks 10 pages across ids above 2^53 through Link, and ends with no repeat and no gap", async () => {
    const created = range(TWO_TO_53 + 100n, 50);
    for (const id of created)
      expect((await openapiFetch.createPlant(store(), { id, name: `p${id}`, tag: "ofetch-walk" })).status).toBe(200);
    const pages = await openapiFetch.walkPages(store(), { tag: "ofetch-walk", limit: 5 }, { exact: true });
    expect(pages).toHaveLength(10);
    expect(ids(pages.flat())).toEqual(created);
  });

  it("still ends after the same 10 pages when ids are parsed with plain JSON.parse, because the cursor is text", async () => {
    const pages = await openapiFetch.walkPages(store(), { tag: "ofetch-walk", limit: 5 }, { exact: false });
    expect(pages).toHaveLength(10);
    expect(pages.flat().map((plant) => plant.name)).toEqual(range(TWO_TO_53 + 100n, 50).map((id) => `p${id}`));
    // What the parse cost: neighbouring ids read as one number, which is why `after` is not an id.
    expect(new Set(pages.flat().map((plant) => plant.id)).size).toBeLessThan(50);
  });

  it("reads a plant with its ETag, patches it with If-Match, and gets 412 with the current ETag for a stale one", async () => {
    const id = TWO_TO_53 + 7n;
    expect((await openapiFetch.createPlant(store(), { id, name: "Calathea", tag: "ofetch-life" })).status).toBe(200);
    const read = await openapiFetch.getPlant(store(), id);
    expect(read).toMatchObject({ status: 200, plant: { id, name: "Calathea", tag: "ofetch-life" } });
    expect(read.etag).toMatch(/^"[\w-]{27}"$/);

    const patched = await openapiFetch.updatePlant(store(), id, { name: "Calathea orbifolia", tag: null }, read.etag!);
    expect(patched).toMatchObject({ status: 200, plant: { id, name: "Calathea orbifolia" } });
    expect(patched.plant).not.toHaveProperty("tag");
    expect(patched.etag).toMatch(/^"[\w-]{27}"$/);
    expect(patched.etag).not.toBe(read.etag);

    const stale = await openapiFetch.updatePlant(store(), id, { name: "Lost update" }, read.etag!);
    expect(stale).toMatchObject({ status: 412, error: { error: 41200 }, etag: patched.etag });
    await expect(openapiFetch.getPlant(store(), id)).resolves.toMatchObject({
      status: 200,
      plant: { id, name: "Calathea orbifolia" },
      etag: patched.etag,
    });
  });

  it("deletes by exact id, then answers 404 (40401)", async () => {
    await expect(openapiFetch.deletePlant(store(), INT64_MAX)).resolves.toEqual({ status: 204 });
    await expect(openapiFetch.deletePlant(store(), TWO_TO_53 + 1n)).resolves.toEqual({ status: 204 });
    await expect(openapiFetch.deletePlant(store(), INT64_MAX)).resolves.toMatchObject({
      status: 404,
      error: { error: 40401 },
    });
    const page = await openapiFetch.listPage(store(), { tag: "ofetch-edge" }, { exact: true });
    expect(ids(page.plants)).toEqual([INT64_MIN, TWO_TO_53 - 1n, TWO_TO_53]);
  });
});

describe("a client from @hey-api/openapi-ts (bigInt transformers), with its body serializer and fetch hooks", () => {
  const client = () => heyApi.plantStore(server.url, TEST_TOKEN);
  const edges = [INT64_MIN + 1n, TWO_TO_53 - 3n, TWO_TO_53 + 3n, INT64_MAX - 1n];

  it("creates, replays and is refused a conflict, with ids around 2^53 and at the int64 bounds", async () => {
    for (const id of edges) {
      const plant = { id, name: `Fern ${id}`, tag: "hey-edge" };
      await expect(heyApi.create(client(), plant)).resolves.toMatchObject({
        status: 200,
        plant: { name: plant.name, tag: "hey-edge" },
      });
      await expect(heyApi.create(client(), plant)).resolves.toMatchObject({
        status: 200,
        plant: { name: plant.name, tag: "hey-edge" },
      });
      await expect(heyApi.create(client(), { ...plant, tag: "other" })).resolves.toMatchObject({
        status: 409,
        error: { error: 40900 },
      });
    }
  });

  it("lists every page through Link, ids exact as bigints, and deletes by exact id", async () => {
    const created = range(TWO_TO_53 + 500n, 12);
    for (const id of created)
      expect((await heyApi.create(client(), { id, name: `p${id}`, tag: "hey-walk" })).status).toBe(200);
    const pages = await heyApi.walkPages(client(), { tag: "hey-walk", limit: 5 });
    expect(pages.map((page) => page.length)).toEqual([5, 5, 2]);
    expect(pages.flat().map((plant) => plant.id)).toEqual(created);

    const [first] = await heyApi.walkPages(client(), { tag: "hey-edge", limit: 10 });
    expect(first?.map((plant) => plant.id)).toEqual(edges);
    await expect(heyApi.remove(client(), INT64_MAX - 1n)).resolves.toMatchObject({ status: 204 });
    await expect(heyApi.remove(client(), INT64_MAX - 1n)).resolves.toMatchObject({
      status: 404,
      error: { error: 40401 },
    });
  });
});

describe("PUT /plants/{id} with If-None-Match: *, a header the document declares, from each generated client", () => {
  it("creates the plant on a free id (201 with Location and ETag), and is refused on a taken one (412)", async () => {
    const store = openapiFetch.plantStore(server.url, TEST_TOKEN, { exact: true }) as never;
    const fetched = await openapiFetch.createWithPut(store, TWO_TO_53 + 901n, { name: "Hoya", tag: "put-create" });
    expect(fetched).toMatchObject({
      status: 201,
      plant: { id: TWO_TO_53 + 901n, name: "Hoya", tag: "put-create" },
      location: `/plants/${TWO_TO_53 + 901n}`,
    });
    expect(fetched.etag).toMatch(/^"/);
    await expect(openapiFetch.createWithPut(store, TWO_TO_53 + 901n, { name: "Other" })).resolves.toMatchObject({
      status: 412,
      error: { error: 41200 },
    });
    await expect(
      heyApi.createWithPut(heyApi.plantStore(server.url, TEST_TOKEN), TWO_TO_53 + 902n, { name: "Hoya" }),
    ).resolves.toMatchObject({ status: 201, location: `/plants/${TWO_TO_53 + 902n}` });
    await expect(orval.createWithPut(903, { name: "Hoya" })).resolves.toMatchObject({
      status: 201,
      location: "/plants/903",
    });
  });
});

describe("PATCH /plants/{id}: the call of each generated client that the document and the client README show", () => {
  it("is the same in both places", () => {
    expect(callsByGenerator(patchDescription)).toEqual(readmeCalls());
  });

  it("changes the plant (200) with each generator, where openapi-fetch without the media type gets 415", async () => {
    const fresh = async (id: bigint) => {
      const store = openapiFetch.plantStore(server.url, TEST_TOKEN, { exact: true });
      expect((await openapiFetch.createPlant(store, { id, name: "Pilea", tag: "patched" })).status).toBe(200);
      return (await openapiFetch.getPlant(store, id)).etag!;
    };
    const store = openapiFetch.plantStore(server.url, TEST_TOKEN, { exact: true });
    const heyClient = heyApi.plantStore(server.url, TEST_TOKEN);
    await expect(patches.openapiFetch.patch(store, TWO_TO_53 + 911n, await fresh(TWO_TO_53 + 911n))).resolves.toBe(200);
    await expect(patches.heyApi.patch(heyClient, TWO_TO_53 + 912n, await fresh(TWO_TO_53 + 912n))).resolves.toBe(200);
    await expect(patches.orval.patch(913, await fresh(913n))).resolves.toBe(200);
    const etag = await fresh(TWO_TO_53 + 914n);
    await expect(patches.openapiFetchWithoutMediaType.patch(store, TWO_TO_53 + 914n, etag)).resolves.toBe(415);
    for (const id of [TWO_TO_53 + 911n, TWO_TO_53 + 912n, 913n]) {
      const read = await openapiFetch.getPlant(store, id);
      expect(BigInt(read.plant!.id), String(id)).toBe(id);
      expect(read.plant, String(id)).toEqual(expect.objectContaining({ name: "Pilea" }));
      expect(read.plant, String(id)).not.toHaveProperty("tag");
    }
  });
});

describe("GET /plants/events as generated clients see it", () => {
  it("is typed as the stream's text (string) by openapi-typescript and orval, not as an array of events", async () => {
    // stream-types.ts compiled beside the generated code (tsc above fails on any other type); and as written:
    const types = (await import(pathToFileURL(join(project, "stream-types.ts")).href)) as Record<string, boolean>;
    expect({ ...types }).toEqual({ openapiTypescriptStreamBody: true, orvalStreamBody: true });
    const generated = readFileSync(join(project, "generated", "openapi-typescript.ts"), "utf8");
    expect(generated).toMatch(/"text\/event-stream": string;/);
  });

  it("resolves through orval's generated watchPlants once the stream has opened, without waiting for an end", async () => {
    const opening = await orval.watchOpening();
    expect(opening.status).toBe(200);
    expect(opening.contentType).toBe("text/event-stream; charset=utf-8");
    expect(opening.text).toMatch(/^retry: 2000\n\nid: \d+\n\n/);
  });
});
