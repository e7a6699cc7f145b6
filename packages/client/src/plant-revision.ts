import { NewPlant, parseJsonLossless } from "@plantstore/schema";

import { requiredETag } from "./entity-tag.ts";
import { readJsonOn } from "./error-response.ts";
import { PlantStoreProtocolError } from "./errors.ts";

/** One plant as stored (`{ id, name, tag? }`, the exact id a bigint) and the `ETag` of that revision. */
export type PlantRevision = { plant: NewPlant; etag: string };

/**
 * A plant answered by `/plants/{id}` with its `ETag`, on one of `statuses`; any other 2xx is a
 * protocol error and an error status throws its typed error. A plant under another id than the
 * one asked for cannot be trusted either.
 */
export async function readPlantRevision(
  response: Response,
  id: bigint,
  statuses: readonly number[],
): Promise<PlantRevision> {
  const body = await readJsonOn(response, statuses, parseJsonLossless);
  const { status } = response;
  const etag = requiredETag(response);
  const plant = NewPlant.safeParse(body);
  if (!plant.success)
    throw new PlantStoreProtocolError(`HTTP ${status}: the response body is not a plant`, {
      status,
      cause: plant.error,
    });
  if (plant.data.id !== id)
    throw new PlantStoreProtocolError(`HTTP ${status}: answered plant ${plant.data.id} for plant ${id}`, { status });
  return { plant: plant.data, etag };
}
