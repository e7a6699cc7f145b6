import type { Plant } from "./generated/orval.js";
import { replacePlant, watchPlants } from "./generated/orval.js";

/**
 * Calls of a client generated from `/openapi.json` by orval (fetch client, with the custom fetch of
 * orval-fetch.ts): ids stay below 2^53 here, since orval types int64 as `number`.
 */

export { connectPlantStore } from "./orval-fetch.js";

/**
 * `GET /plants/events` through the generated `watchPlants`: it resolves once the stream's opening
 * (the retry hint and where it starts) has arrived, when the caller stops listening.
 */
export async function watchOpening() {
  const stop = new AbortController();
  const answer = await watchPlants(undefined, {
    signal: stop.signal,
    onText: (text) => {
      if (text.split("\n\n").length > 2) stop.abort();
    },
  });
  return {
    status: answer.status,
    contentType: answer.headers.get("content-type"),
    text: answer.status === 200 ? answer.data : undefined,
  };
}

/** Creates a plant by `PUT` only if its id is free (`If-None-Match: *`). */
export async function createWithPut(id: number, plant: Plant) {
  const answer = await replacePlant(id, plant, { headers: { "If-None-Match": "*" } });
  return { status: answer.status, location: answer.headers.get("location"), etag: answer.headers.get("etag") };
}
