import type { NewPlant, PlantRevision } from "@plantstore/client";
import { printable, stringifyJsonLossless } from "@plantstore/schema";

/** A plant as one line of human output: `<id>: <name> (<tag>)`, without parentheses when it has no tag. */
export function plantLine(plant: NewPlant): string {
  return `${plant.id}: ${printable(plant.name)}${plant.tag === undefined ? "" : ` (${printable(plant.tag)})`}\n`;
}

/** `--json` of a read or a change: `{"plant":{…},"etag":"\"…\""}`, the id exact, the ETag as sent (quotes included). */
export function revisionJson({ plant, etag }: PlantRevision): string {
  return `${stringifyJsonLossless({ plant, etag })}\n`;
}
