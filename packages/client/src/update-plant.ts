import { PlantPatch } from "@plantstore/schema";

import { conditionHeader, type EntityTags } from "./entity-tag.ts";
import { PlantStoreInputError } from "./errors.ts";
import { toPathId } from "./plant-id.ts";
import { type PlantRevision, readPlantRevision } from "./plant-revision.ts";
import type { Connection } from "./send-request.ts";

export type UpdatePlantOptions = {
  /** The ETag of the revision the change is based on: the server refuses it (412) when the plant changed since. */
  ifMatch: EntityTags;
  signal?: AbortSignal;
};

/** Checked with the schema the server reads the body with; unknown keys are dropped, as the server ignores them. */
function toPatchBody(patch: PlantPatch): string {
  if (typeof patch !== "object" || patch === null || Array.isArray(patch))
    throw new PlantStoreInputError([{ path: "", message: "a patch must be an object" }], "patch");
  // The path names the plant; the server refuses a patch that tries to change its id.
  if ("id" in patch) throw new PlantStoreInputError([{ path: "id", message: "cannot be changed" }], "patch");
  const parsed = PlantPatch.safeParse(patch);
  if (!parsed.success)
    throw new PlantStoreInputError(
      parsed.error.issues.map((issue) => ({ path: issue.path.map(String).join("."), message: issue.message })),
      "patch",
    );
  return JSON.stringify(parsed.data);
}

/** `PATCH /plants/{id}`: applies `patch` if the plant is still the revision `ifMatch` names. */
export async function updatePlant(
  connection: Connection,
  id: bigint | number,
  patch: PlantPatch,
  options: UpdatePlantOptions,
): Promise<PlantRevision> {
  const pathId = toPathId(id);
  const body = toPatchBody(patch);
  const ifMatch = conditionHeader(options?.ifMatch, "ifMatch");
  const response = await connection.send(connection.url(`/plants/${pathId}`), {
    method: "PATCH",
    headers: { "Content-Type": "application/merge-patch+json", "If-Match": ifMatch },
    body,
    signal: options?.signal,
  });
  return readPlantRevision(response, pathId, [200]);
}
