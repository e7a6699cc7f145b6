import { createClient } from "./generated/hey-api/client/index.js";
import { createPlant, deletePlant, listPlants, replacePlant } from "./generated/hey-api/sdk.gen.js";
import type { NewPlant, Plant } from "./generated/hey-api/types.gen.js";
import { nextAfter, quoteBigIntegers, stringifyLossless } from "./lossless-json.js";

/**
 * A Plant Store client as a user generates it from `/openapi.json` with @hey-api/openapi-ts
 * (client-fetch, sdk, and transformers with `bigInt: true`, so ids are typed `bigint`). Two hooks
 * keep ids exact across int64: its body serializer writes bigints as JSON integers (the default
 * one quotes them, which the server refuses), and its fetch hands the client JSON whose integers
 * beyond 2^53 are strings, which its transformers turn into bigints without a rounding parse.
 */

export function plantStore(baseUrl: string, token: string) {
  return createClient({
    baseUrl,
    auth: token,
    bodySerializer: stringifyLossless,
    fetch: async (input, init) => {
      const response = await fetch(input, init);
      const text = await response.text();
      const body = text === "" ? null : response.ok ? quoteBigIntegers(text) : text;
      return new Response(body, {
        status: response.status,
        statusText: response.statusText,
        headers: response.headers,
      });
    },
  });
}
export type PlantStore = ReturnType<typeof plantStore>;

/** The status of an answer; hey-api leaves `response` undefined when the request got none. */
function statusOf(response: Response | undefined, error: unknown): number {
  if (response === undefined) throw new Error(`no answer: ${String(error)}`);
  return response.status;
}

export async function create(client: PlantStore, plant: NewPlant) {
  const { data, error, response } = await createPlant({ client, body: plant });
  return { status: statusOf(response, error), plant: data, error };
}

export async function remove(client: PlantStore, id: bigint) {
  const { error, response } = await deletePlant({ client, path: { id } });
  return { status: statusOf(response, error), error };
}

/** Creates the plant by `PUT` only if its id is free (`If-None-Match: *`, a declared header). */
export async function createWithPut(client: PlantStore, id: bigint, plant: Plant) {
  const { data, error, response } = await replacePlant({
    client,
    path: { id },
    headers: { "If-None-Match": "*" },
    body: plant,
  });
  return { status: statusOf(response, error), plant: data, location: response?.headers.get("location"), error };
}

/** Every page from the start, following `Link: <…>; rel="next"` until there is none. */
export async function walkPages(client: PlantStore, query: { tag?: string; limit?: number }): Promise<NewPlant[][]> {
  const pages: NewPlant[][] = [];
  let after: string | undefined;
  do {
    const { data, error, response } = await listPlants({
      client,
      query: after === undefined ? query : { ...query, after },
    });
    const status = statusOf(response, error);
    if (data === undefined || response === undefined)
      throw new Error(`GET /plants answered ${status}: ${JSON.stringify(error)}`);
    pages.push(data);
    after = nextAfter(response.headers.get("link"));
    if (pages.length > 1_000) throw new Error("more than 1,000 pages: the walk does not end");
  } while (after !== undefined);
  return pages;
}
