import { forEachOpenApiProcedure, normalizePath } from "trpc-to-openapi";

import { PLANT_EVENTS_OPERATION } from "../../src/http/plant-events-doc.ts";
import { appRouter } from "../../src/router/root.ts";
import { headOperation } from "../../src/service-docs.ts";
import type { Meta } from "../../src/trpc.ts";

const METHODS = new Set(["get", "put", "post", "delete", "options", "head", "patch", "trace"]);

export type Listed<Operation> = { method: string; path: string; operation: Operation };

/**
 * Every operation of a document's `paths`, so a test that checks all of them also checks one
 * added later instead of skipping it, as a hand-written list would.
 */
export function documentedOperations<Operation>(doc: { paths: unknown }): Listed<Operation>[] {
  return Object.entries(doc.paths as Record<string, Record<string, Operation>>).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => METHODS.has(method))
      .map(([method, operation]) => ({ method, path, operation })),
  );
}

/**
 * Every operation the service serves, as `<method> <path>` and its operationId: each procedure of
 * the router that the REST adapter serves, the event stream, which no procedure can be and the
 * document adds itself (src/http/plant-events-doc.ts), and a HEAD wherever there is a GET, as the
 * app answers one there.
 */
export function routerOperations(): Array<{ method: string; path: string; operationId: string | undefined }> {
  const found: Array<{ method: string; path: string; operationId: string | undefined }> = [
    { method: "get", path: PLANT_EVENTS_OPERATION.path, operationId: "watchPlants" },
  ];
  forEachOpenApiProcedure<Meta>(appRouter._def.procedures, ({ meta }) => {
    found.push({
      method: meta.openapi.method.toLowerCase(),
      path: normalizePath(meta.openapi.path),
      operationId: meta.openapi.operationId,
    });
  });
  const heads = found
    .filter(({ method }) => method === "get")
    .map(({ path, operationId }) => ({
      method: "head",
      path,
      operationId: headOperation({ path, operationId: operationId ?? "", summary: "" }).operationId,
    }));
  return [...found, ...heads];
}

/** A concrete request target for a templated path: each `{parameter}` filled with `value`. */
export const concretePath = (path: string, value = "7"): string => path.replace(/\{[^}]+\}/g, value);
