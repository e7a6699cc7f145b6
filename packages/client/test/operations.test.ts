import { type AppRouter, appRouter, buildOpenApiDocument } from "@plantstore/server";
import { describe, expect, it } from "vitest";

import { createPlantStoreClient, type PlantStoreClient, PlantStoreError } from "../src/index.ts";

/**
 * Every procedure of the server's router, by its path (`plants.create`), from the router's type
 * alone: @plantstore/server is only a devDependency of the client, for its tests.
 */
type ProcedurePath<Record, Prefix extends string = ""> = {
  [K in keyof Record & string]: Record[K] extends { _def: { procedure: true } }
    ? `${Prefix}${K}`
    : Record[K] extends { _def: { record: infer Nested } }
      ? ProcedurePath<Nested, `${Prefix}${K}.`>
      : ProcedurePath<Record[K], `${Prefix}${K}.`>;
}[keyof Record & string];

/**
 * The client method of each procedure, which is also its operationId. `satisfies` fails the type
 * check (`pnpm typecheck`) when the router gains a procedure that is not listed here, loses one
 * that is, or a listed method is not on PlantStoreClient.
 */
const CLIENT_METHOD = {
  "plants.create": "createPlant",
  "plants.list": "listPlants",
  "plants.delete": "deletePlant",
  "plants.get": "getPlant",
  "plants.update": "updatePlant",
  "plants.replace": "replacePlant",
  "whoami.get": "whoAmI",
} as const satisfies Record<ProcedurePath<AppRouter["_def"]["record"]>, keyof PlantStoreClient>;

/**
 * Operations the document describes that are no router procedure, by operationId, which is also
 * the client method: a stream, which trpc-to-openapi cannot serve, is a plain path of the server.
 */
const PLAIN_PATH_METHODS = ["watchPlants"] as const satisfies ReadonlyArray<keyof PlantStoreClient>;

type OperationMethod = (typeof CLIENT_METHOD)[keyof typeof CLIENT_METHOD] | (typeof PLAIN_PATH_METHODS)[number];

/** One call of each operation's method; the type check asks for one per operation. */
const CALL: Record<OperationMethod, (client: PlantStoreClient) => Promise<unknown>> = {
  createPlant: (client) => client.createPlant({ id: 7, name: "Monstera" }),
  listPlants: (client) => client.listPlants(),
  deletePlant: (client) => client.deletePlant(7),
  getPlant: (client) => client.getPlant(7),
  updatePlant: (client) => client.updatePlant(7, { name: "Monstera" }, { ifMatch: '"a"' }),
  replacePlant: (client) => client.replacePlant(7, { name: "Monstera" }, { ifMatch: '"a"' }),
  whoAmI: (client) => client.whoAmI(),
  // A 503 is retried; the first retry's cause, thrown from onReconnect, ends the iteration with it.
  watchPlants: (client) =>
    client
      .watchPlants({
        onReconnect: ({ cause }) => {
          throw cause;
        },
      })
      .next(),
};

const METHODS = new Set(["get", "put", "post", "delete", "patch"]);
const document = buildOpenApiDocument(appRouter, { bodyLimitBytes: 1024 }) as unknown as {
  paths: Record<string, Record<string, { operationId?: string }>>;
};
const documented = Object.entries(document.paths).flatMap(([path, item]) =>
  Object.entries(item)
    .filter(([method]) => METHODS.has(method))
    .map(([method, operation]) => ({ method: method.toUpperCase(), path, operationId: operation.operationId })),
);

describe("the client has a method for every operation of the server", () => {
  it("lists every procedure of the router, under the operationId the document gives it", () => {
    // Typed as the nested record; at run time tRPC keeps every procedure here by its dotted path.
    const procedures = appRouter._def.procedures as unknown as Record<string, { _def: { meta?: unknown } }>;
    expect(Object.keys(procedures).length).toBeGreaterThan(0);
    expect(Object.keys(procedures).sort()).toEqual(Object.keys(CLIENT_METHOD).sort());
    for (const [path, procedure] of Object.entries(procedures)) {
      const meta = procedure._def.meta as { openapi?: { operationId?: string } } | undefined;
      expect(meta?.openapi?.operationId, path).toBe(CLIENT_METHOD[path as keyof typeof CLIENT_METHOD]);
    }
    expect(documented.map((o) => o.operationId).sort()).toEqual(
      [...Object.values(CLIENT_METHOD), ...PLAIN_PATH_METHODS].sort(),
    );
  });

  it("sends each operation's method to its path under the base URL, keeping the base URL's path prefix", async () => {
    const sent: string[] = [];
    const client = createPlantStoreClient({
      baseUrl: "https://plants.example/api/",
      token: "t0ken",
      fetch: async (input, init) => {
        sent.push(`${init?.method} ${input instanceof Request ? input.url : input.toString()}`);
        return Response.json({ error: 50300, message: "unavailable" }, { status: 503 });
      },
    });
    expect(documented.length).toBeGreaterThan(0);
    for (const { method, path, operationId } of documented) {
      sent.length = 0;
      await expect(CALL[operationId as OperationMethod](client), operationId).rejects.toBeInstanceOf(PlantStoreError);
      // Path parameters filled with the call's: every call above uses the id 7.
      expect(sent, operationId).toEqual([`${method} https://plants.example/api${path.replace(/\{[^}]+\}/g, "7")}`]);
    }
  });
});
