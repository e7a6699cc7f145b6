import { type NewPlant, type Plant, type PlantPatch, stringifyJsonLossless, type WhoAmI } from "@plantstore/schema";

import { deletePlant, type DeletePlantOptions } from "./delete-plant.ts";
import { getPlant, type GetPlantOptions, type GetPlantResult } from "./get-plant.ts";
import { iteratePlants, listPlants, type ListPlantsOptions, type PlantPage } from "./list-plants.ts";
import { type NewPlantInput, toNewPlant } from "./new-plant-input.ts";
import type { PlantRevision } from "./plant-revision.ts";
import { readPlantResponse } from "./read-response.ts";
import { type ReplacedPlant, replacePlant, type ReplacePlantOptions } from "./replace-plant.ts";
import { createConnection } from "./send-request.ts";
import { updatePlant, type UpdatePlantOptions } from "./update-plant.ts";
import { watchPlants, type WatchPlantsOptions } from "./watch-plants.ts";
import type { WatchPlantsEvent } from "./watch-plants-event.ts";
import { whoAmI } from "./whoami.ts";

export type PlantStoreClientOptions = {
  /** Where the service is, e.g. `https://plants.example.com` or `http://127.0.0.1:3000/`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <token>`. */
  token: string;
  /** Defaults to the global `fetch`, looked up at each call. */
  fetch?: typeof globalThis.fetch;
};

export type RequestOptions = {
  signal?: AbortSignal;
};

export type PlantStoreClient = {
  /** `POST /plants`: resolves with the stored Plant; safe to retry with the same plant. */
  createPlant(newPlant: NewPlantInput, options?: RequestOptions): Promise<Plant>;
  /** `GET /plants`: one page (at most `limit` plants after `after`, with `tag`) and the next page's query. */
  listPlants(options?: ListPlantsOptions, requestOptions?: RequestOptions): Promise<PlantPage>;
  /** Every plant (from `after` on, with `tag`), fetched `limit` at a time: `for await (const plant of …)`. */
  iteratePlants(
    options?: ListPlantsOptions,
    requestOptions?: RequestOptions,
  ): AsyncGenerator<NewPlant, void, undefined>;
  /**
   * `GET /plants/{id}`: the plant and the ETag of its revision (`{ notModified: false, plant, etag }`);
   * rejects with PlantStoreError 404 when no such plant is stored.
   */
  getPlant(
    id: bigint | number,
    options?: RequestOptions & { ifNoneMatch?: undefined },
  ): Promise<GetPlantResult & { notModified: false }>;
  /** With `ifNoneMatch`: `{ notModified: true, etag }` (304) when the plant is still one of those revisions. */
  getPlant(id: bigint | number, options: GetPlantOptions): Promise<GetPlantResult>;
  /**
   * `PATCH /plants/{id}` (JSON merge patch, RFC 7396: a key left out keeps the field, `tag: null`
   * removes the tag): resolves with the plant as changed and its new ETag;
   * rejects with PlantStorePreconditionFailedError (412) when the plant is no longer the `ifMatch` revision.
   */
  updatePlant(id: bigint | number, patch: PlantPatch, options: UpdatePlantOptions): Promise<PlantRevision>;
  /**
   * `PUT /plants/{id}`: replaces the `ifMatch` revision, or creates the plant with `ifNoneMatch: "*"`
   * (`created: true`); 412 when the plant changed, or the id is taken (create) or free (replace).
   */
  replacePlant(id: bigint | number, plant: Plant, options: ReplacePlantOptions): Promise<ReplacedPlant>;
  /**
   * `DELETE /plants/{id}`: resolves on 204; rejects with PlantStoreError 404 when no such plant is
   * stored, and with PlantStorePreconditionFailedError (412) when `ifMatch` no longer names it.
   */
  deletePlant(id: bigint | number, options?: DeletePlantOptions): Promise<void>;
  /** `GET /whoami`: the calling token's kind, id, name, scopes and expiry (never the secret). */
  whoAmI(options?: RequestOptions): Promise<WhoAmI>;
  /** `GET /plants/events`: every change as it commits, resuming by itself across reconnects: `for await (const event of …)`. */
  watchPlants(options?: WatchPlantsOptions): AsyncGenerator<WatchPlantsEvent, void>;
};

// RFC 6750 §2.1 b64token: anything else could not be sent in the header, or not verbatim.
const TOKEN68 = /^[A-Za-z0-9\-._~+/]+=*$/;

function serviceRoot(baseUrl: string): string {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new TypeError(`baseUrl is not an absolute URL: ${JSON.stringify(baseUrl)}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new TypeError(`baseUrl must be http: or https:, not ${url.protocol}`);
  }
  // Keeps any path prefix (`https://host/api/` → `https://host/api`), slash or not.
  return `${url.origin}${url.pathname.replace(/\/+$/, "")}`;
}

/**
 * A client for the Plant Store REST interface. Uses only `fetch`, so it runs in Node >= 22 and in
 * browsers. Configuration mistakes (bad URL, malformed token) throw a TypeError here, at once.
 */
export function createPlantStoreClient(options: PlantStoreClientOptions): PlantStoreClient {
  const root = serviceRoot(options.baseUrl);
  if (typeof options.token !== "string" || !TOKEN68.test(options.token)) {
    throw new TypeError("token must be a non-empty bearer token (RFC 6750 token68 characters)");
  }
  const authorization = `Bearer ${options.token}`;
  // Called as a plain function: a browser's fetch throws "Illegal invocation" when `this` is another object.
  const fetchFn: typeof globalThis.fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));
  const connection = createConnection(root, authorization, fetchFn);

  return {
    async createPlant(newPlant, requestOptions = {}) {
      const body = stringifyJsonLossless(toNewPlant(newPlant));
      const response = await connection.send(connection.url("/plants"), {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body,
        signal: requestOptions.signal,
      });
      return readPlantResponse(response);
    },
    listPlants: (listOptions = {}, requestOptions = {}) => listPlants(connection, listOptions, requestOptions.signal),
    iteratePlants: (listOptions = {}, requestOptions = {}) =>
      iteratePlants(connection, listOptions, requestOptions.signal),
    // One implementation for both overloads: without ifNoneMatch the answer is never a 304.
    getPlant: ((id: bigint | number, options: GetPlantOptions = {}) =>
      getPlant(connection, id, options)) as PlantStoreClient["getPlant"],
    updatePlant: (id, patch, options) => updatePlant(connection, id, patch, options),
    replacePlant: (id, plant, options) => replacePlant(connection, id, plant, options),
    deletePlant: (id, options = {}) => deletePlant(connection, id, options),
    whoAmI: (requestOptions = {}) => whoAmI(connection, requestOptions.signal),
    watchPlants: (watchOptions = {}) => watchPlants(connection, watchOptions),
  };
}
