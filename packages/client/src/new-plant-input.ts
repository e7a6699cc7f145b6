import { NewPlant } from "@plantstore/schema";
import type { z } from "zod";

import { PlantStoreInputError } from "./errors.ts";
import { toPlantId } from "./plant-id.ts";

/** What `createPlant` accepts: a NewPlant whose id may also be a safe-integer number. */
export type NewPlantInput = Omit<z.input<typeof NewPlant>, "id"> & { id: bigint | number };

/**
 * Validates with the same schema the server uses, so a plant the server would refuse with
 * VALIDATION_FAILED never leaves the process. Unknown fields are stripped, as the server does.
 */
export function toNewPlant(input: NewPlantInput): NewPlant {
  if (typeof input !== "object" || input === null) {
    throw new PlantStoreInputError([{ path: "", message: "a plant must be an object" }]);
  }
  const parsed = NewPlant.safeParse({ ...input, id: toPlantId(input.id, "id") });
  if (!parsed.success) {
    throw new PlantStoreInputError(
      parsed.error.issues.map((issue) => ({ path: issue.path.map(String).join("."), message: issue.message })),
    );
  }
  return parsed.data;
}
