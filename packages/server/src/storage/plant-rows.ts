import type { NewPlant } from "@plantstore/schema";

import type { ListedPlant, PlantChange } from "./plant-store.ts";

/** A stored plant as both backends read it: int8 ids as BigInt, no tag as NULL. */
export type PlantRow = { id: bigint; name: string; tag: string | null };
/** The same row where the driver returns arrays (node:sqlite with setReturnArrays); ids as numbers where safe. */
export type PlantRowArray = [id: bigint | number, name: string, tag: string | null];

export function plantRow(plant: NewPlant): PlantRow {
  return { id: plant.id, name: plant.name, tag: plant.tag ?? null };
}

/** The API's plant: a NULL tag is no `tag` key at all, never `"tag": null`. */
export function plantFromRow(row: PlantRow): NewPlant {
  return row.tag === null ? { id: row.id, name: row.name } : { id: row.id, name: row.name, tag: row.tag };
}

/** A plant of a page, from an array row (indexed, so nothing is destructured into a copy). */
export function listedFromRow(row: PlantRowArray): ListedPlant {
  return row[2] === null ? { id: row[0], name: row[1] } : { id: row[0], name: row[1], tag: row[2] };
}

/** Whether a stored row holds the same plant as a write: a retry of it is a replay, not a conflict. */
export function samePlant(
  row: { name: string; tag: string | null },
  plant: { name: string; tag: string | null },
): boolean {
  return row.name === plant.name && row.tag === plant.tag;
}

/** The row a JSON merge patch (RFC 7396) leaves: a missing key keeps its field, `tag: null` removes the tag. */
export function patchedRow(row: PlantRow, change: PlantChange): PlantRow {
  return { id: row.id, name: change.name ?? row.name, tag: change.tag === undefined ? row.tag : change.tag };
}
