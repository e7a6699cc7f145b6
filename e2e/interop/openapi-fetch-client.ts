import createClient from "openapi-fetch";

import type { components, paths } from "./generated/openapi-typescript-bigint.js";
import { nextAfter, parseLossless, stringifyLossless } from "./lossless-json.js";

/**
 * A Plant Store client as a user builds it from `/openapi.json` with openapi-typescript (int64
 * typed `number | bigint` through its `transform` option) and openapi-fetch. `exact`: ids are
 * written with `JSON.rawJSON` and pages read with a lossless parser, as the document advises;
 * without it, plain `JSON.stringify`/`JSON.parse`, as openapi-fetch does by default.
 */

export type NewPlant = components["schemas"]["NewPlant"];
export type PlantPatch = components["schemas"]["PlantPatch"];
export type Plant = components["schemas"]["Plant"];
export type Failure = components["schemas"]["Error"];

export function plantStore(baseUrl: string, token: string, options: { exact: boolean }) {
  return createClient<paths>({
    baseUrl,
    headers: { Authorization: `Bearer ${token}` },
    ...(options.exact ? { bodySerializer: stringifyLossless } : {}),
  });
}
export type PlantStore = ReturnType<typeof plantStore>;

export async function createPlant(store: PlantStore, plant: NewPlant) {
  const { data, error, response } = await store.POST("/plants", { body: plant });
  return { status: response.status, plant: data, error };
}

export async function deletePlant(store: PlantStore, id: number | bigint) {
  const { error, response } = await store.DELETE("/plants/{id}", { params: { path: { id } } });
  return { status: response.status, error };
}

/** One plant and its `ETag`, read exactly (a lossless parse: its id may exceed 2^53). */
export async function getPlant(store: PlantStore, id: number | bigint) {
  const { data, error, response } = await store.GET("/plants/{id}", { params: { path: { id } }, parseAs: "text" });
  return {
    status: response.status,
    plant: data === undefined ? undefined : (parseLossless(data) as NewPlant),
    etag: response.headers.get("etag"),
    error,
  };
}

/**
 * A JSON merge patch, allowed only while the plant still has the ETag `ifMatch` (the document makes
 * the header required, so the generated types do too); a 412 carries the plant's current ETag.
 */
export async function updatePlant(store: PlantStore, id: number | bigint, patch: PlantPatch, ifMatch: string) {
  const { data, error, response } = await store.PATCH("/plants/{id}", {
    params: { path: { id }, header: { "If-Match": ifMatch } },
    body: patch,
    headers: { "Content-Type": "application/merge-patch+json" },
    parseAs: "text",
  });
  return {
    status: response.status,
    plant: data === undefined ? undefined : (parseLossless(data) as NewPlant),
    etag: response.headers.get("etag"),
    error,
  };
}

/**
 * Creates the plant by `PUT` only if its id is free: `If-None-Match: *`, which the document
 * declares, so the generated types take it. 201 with `Location` and `ETag`; 412 when the id is taken.
 */
export async function createWithPut(store: PlantStore, id: number | bigint, plant: Plant) {
  const { data, error, response } = await store.PUT("/plants/{id}", {
    params: { path: { id }, header: { "If-None-Match": "*" } },
    body: plant,
    parseAs: "text",
  });
  return {
    status: response.status,
    plant: data === undefined ? undefined : (parseLossless(data) as NewPlant),
    location: response.headers.get("location"),
    etag: response.headers.get("etag"),
    error,
  };
}

/** One page: `after` is the Link header's cursor (a string) or an id. */
export async function listPage(
  store: PlantStore,
  query: { tag?: string; limit?: number; after?: string | number | bigint },
  options: { exact: boolean },
): Promise<{ plants: NewPlant[]; next: string | undefined }> {
  const { data, error, response } = await store.GET("/plants", { params: { query }, parseAs: "text" });
  if (error !== undefined) throw new Error(`GET /plants answered ${response.status}: ${JSON.stringify(error)}`);
  const plants = (options.exact ? parseLossless(data) : JSON.parse(data)) as NewPlant[];
  return { plants, next: nextAfter(response.headers.get("link")) };
}

/** Every page from the start, following `Link: <…>; rel="next"` until there is none. */
export async function walkPages(
  store: PlantStore,
  query: { tag?: string; limit?: number },
  options: { exact: boolean },
): Promise<NewPlant[][]> {
  const pages: NewPlant[][] = [];
  let after: string | undefined;
  do {
    const page = await listPage(store, after === undefined ? query : { ...query, after }, options);
    pages.push(page.plants);
    after = page.next;
    if (pages.length > 1_000) throw new Error("more than 1,000 pages: the walk does not end");
  } while (after !== undefined);
  return pages;
}
