import { NewPlant, toInt64 } from "@plantstore/schema";
import type { z } from "zod";
import { PlantStoreInputError } from "./errors.ts";

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
  let id: unknown = input.id;
  if (typeof id === "number") {
    // A number beyond 2^53 has already lost digits; refusing it beats sending a neighbour's id.
    try {
      id = toInt64(id);
    } catch (error) {
      throw new PlantStoreInputError([{ path: "id", message: (error as Error).message }]);
    }
  }
  const parsed = NewPlant.safeParse({ ...input, id });
  if (!parsed.success) {
    throw new PlantStoreInputError(
      parsed.error.issues.map((issue) => ({ path: issue.path.map(String).join("."), message: issue.message })),
    );
  }
  return parsed.data;
}
