import type { NewPlant } from "@plantstore/schema";

/** A stored plant as both backends read it: int8 ids as BigInt, no tag as NULL. */
export type PlantRow = { id: bigint; name: string; tag: string | null };
/** The same row where the driver returns arrays (node:sqlite with setReturnArrays). */
export type PlantRowArray = [id: bigint, name: string, tag: string | null];

export function plantRow(plant: NewPlant): PlantRow {
  return { id: plant.id, name: plant.name, tag: plant.tag ?? null };
}

/** The API's plant: a NULL tag is no `tag` key at all, never `"tag": null`. */
export function plantFromRow(row: PlantRow | PlantRowArray): NewPlant {
  // Indexed rather than destructured, so an object row is not copied into an array first.
  return Array.isArray(row) ? plant(row[0], row[1], row[2]) : plant(row.id, row.name, row.tag);
}

function plant(id: bigint, name: string, tag: string | null): NewPlant {
  return tag === null ? { id, name } : { id, name, tag };
}

/** Whether a stored row holds the same plant as a write: a retry of it is a replay, not a conflict. */
export function samePlant(row: { name: string; tag: string | null }, plant: { name: string; tag: string | null }): boolean {
  return row.name === plant.name && row.tag === plant.tag;
}
