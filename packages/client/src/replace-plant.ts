import { Plant, stringifyJsonLossless } from "@plantstore/schema";

import { conditionHeader, type EntityTags } from "./entity-tag.ts";
import { PlantStoreInputError } from "./errors.ts";
import { toPathId } from "./plant-id.ts";
import { type PlantRevision, readPlantRevision } from "./plant-revision.ts";
import type { Connection } from "./send-request.ts";

/**
 * Which plant `replacePlant` may write over: the revision `ifMatch` names (the id must be taken),
 * or none at all (`ifNoneMatch: "*"`: the id must be free). One of the two is required.
 */
export type ReplacePlantOptions = (
  { ifMatch: EntityTags; ifNoneMatch?: undefined } | { ifNoneMatch: "*"; ifMatch?: undefined }
) & { signal?: AbortSignal };

/** The plant as stored after `replacePlant`, its ETag, and whether it was created (201) rather than replaced (200). */
export type ReplacedPlant = PlantRevision & { created: boolean };

function toPlantBody(plant: Plant, id: bigint): string {
  if (typeof plant !== "object" || plant === null || Array.isArray(plant))
    throw new PlantStoreInputError([{ path: "", message: "a plant must be an object" }]);
  // A plant read with getPlant carries its id; the same id is redundant, another one a mistake.
  const given: unknown = (plant as { id?: unknown }).id;
  if (given !== undefined && given !== id && !(Number.isSafeInteger(given) && BigInt(given as number) === id))
    throw new PlantStoreInputError([{ path: "id", message: `is not the id replaced (${id})` }]);
  const parsed = Plant.safeParse(plant);
  if (!parsed.success)
    throw new PlantStoreInputError(
      parsed.error.issues.map((issue) => ({ path: issue.path.map(String).join("."), message: issue.message })),
    );
  return stringifyJsonLossless(parsed.data);
}

function preconditionHeaders(options: ReplacePlantOptions): Record<string, string> {
  const { ifMatch, ifNoneMatch } = options ?? {};
  if (ifMatch !== undefined && ifNoneMatch !== undefined)
    throw new PlantStoreInputError(
      [{ path: "ifMatch", message: "and ifNoneMatch exclude each other: replace a revision, or create" }],
      "precondition",
    );
  if (ifNoneMatch === undefined) return { "If-Match": conditionHeader(ifMatch, "ifMatch") };
  if (ifNoneMatch !== "*")
    throw new PlantStoreInputError(
      [{ path: "ifNoneMatch", message: 'must be "*": create only when the id is free' }],
      "precondition",
    );
  return { "If-None-Match": "*" };
}

/**
 * `PUT /plants/{id}`: stores `plant` under `id` in place of the revision `ifMatch` names (200), or
 * creates it when the id is free and `ifNoneMatch` is `"*"` (201).
 */
export async function replacePlant(
  connection: Connection,
  id: bigint | number,
  plant: Plant,
  options: ReplacePlantOptions,
): Promise<ReplacedPlant> {
  const pathId = toPathId(id);
  const body = toPlantBody(plant, pathId);
  const headers = preconditionHeaders(options);
  const creating = "If-None-Match" in headers;
  const response = await connection.send(connection.url(`/plants/${pathId}`), {
    method: "PUT",
    headers: { "Content-Type": "application/json", ...headers },
    body,
    signal: options?.signal,
  });
  // Only a create answers 201 and only a replacement 200: anything else could not be trusted.
  const revision = await readPlantRevision(response, pathId, [creating ? 201 : 200]);
  return { ...revision, created: creating };
}
