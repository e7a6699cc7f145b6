import { PlantId, toInt64 } from "@plantstore/schema";

import { PlantStoreInputError } from "./errors.ts";

/**
 * An id as a caller gives it (a plant's, or where a listing starts): a number becomes the exact
 * bigint, and is refused as `path` of `subject` when it is not a safe integer, since a number
 * beyond 2^53 has already lost digits and sending a neighbour's id would be worse. Anything else
 * is returned as it is, for the schema that reads the whole input to check with the rest of it.
 */
export function toPlantId(id: unknown, path: string, subject?: string): unknown {
  if (typeof id !== "number") return id;
  try {
    return toInt64(id);
  } catch (error) {
    throw new PlantStoreInputError([{ path, message: (error as Error).message }], subject);
  }
}

/** The id of `/plants/{id}`: a bigint, or a safe-integer number; anything else is refused before sending. */
export function toPathId(id: bigint | number): bigint {
  const parsed = PlantId.safeParse(toPlantId(id, "id", "id"));
  if (!parsed.success) {
    throw new PlantStoreInputError(
      parsed.error.issues.map((issue) => ({ path: "id", message: issue.message })),
      "id",
    );
  }
  return parsed.data;
}
