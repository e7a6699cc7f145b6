import { z } from "zod";

import { Int64 } from "./int64.ts";

/** Length limits the interface leaves open ("not shown"); chosen here and documented in docs/api-decisions.md. */
export const NAME_MAX_LENGTH = 256;
export const TAG_MAX_LENGTH = 64;

// Text must round-trip exactly through SQLite and PostgreSQL: lone UTF-16 surrogates would be
// replaced by U+FFFD on the way to UTF-8, and PostgreSQL refuses U+0000 in text.
// Messages name no field: the server prefixes the path ("name must be a string").
const storableText = (max: number) =>
  z
    .string({ error: (issue) => (issue.input === undefined ? "is required" : "must be a string") })
    .min(1, { error: "must not be empty" })
    .max(max, { error: `must be at most ${max} characters` })
    .refine((s) => s.isWellFormed() && !s.includes("\u0000"), {
      error: "must be well-formed Unicode text without U+0000",
    });

/**
 * The plant the served document's examples show: the body of `POST /plants`, and the id of
 * `DELETE /plants/{id}`, so a collection generated from the document (Postman's) creates it and
 * then deletes it. The id is a JSON number on purpose: the document is written with plain
 * `JSON.stringify`, and a small id is exact in every JSON parser.
 */
export const NEW_PLANT_EXAMPLE = { id: 10, name: "Monstera", tag: "indoor" } as const;

export const PlantName = storableText(NAME_MAX_LENGTH).meta({
  description: "The name of the plant",
  examples: [NEW_PLANT_EXAMPLE.name],
});
export const PlantTag = storableText(TAG_MAX_LENGTH).meta({
  description: "A tag that specifies the type of the plant",
  examples: [NEW_PLANT_EXAMPLE.tag],
});
export const PlantId = Int64.meta({
  description: "Identification number of the plant",
  examples: [NEW_PLANT_EXAMPLE.id],
});

export const Plant = z
  .object({
    name: PlantName,
    tag: PlantTag.optional(),
  })
  .meta({ id: "Plant", examples: [{ name: NEW_PLANT_EXAMPLE.name, tag: NEW_PLANT_EXAMPLE.tag }] });
export type Plant = z.infer<typeof Plant>;

/** The request body of `POST /plants`: every field of Plant plus the client-chosen `id`. */
// `id` first, so listed plants read `{"id":…,"name":…,"tag":…}`.
export const NewPlant = z
  .object({ id: PlantId, ...Plant.shape })
  .meta({ id: "NewPlant", examples: [NEW_PLANT_EXAMPLE] });
export type NewPlant = z.infer<typeof NewPlant>;

/**
 * The body of `PATCH /plants/{id}`, a JSON merge patch (RFC 7396): a field left out keeps its
 * value, `"tag": null` removes the tag, and what is sent follows NewPlant's rules. Unlike
 * `POST /plants` (which ignores unknown fields, as it always has), a patch with an unknown field
 * is refused: a misspelt `"nmae"` would otherwise answer 200 and change nothing, a lost update in
 * all but name. An `id` is refused by the server too, as the path names the plant.
 */
export const PlantPatch = z
  .object({
    name: PlantName.optional(),
    tag: PlantTag.nullable()
      .optional()
      .meta({ description: "A tag that specifies the type of the plant; null removes it" }),
  })
  .strict()
  .meta({ id: "PlantPatch", examples: [{ tag: "outdoor" }] });
export type PlantPatch = z.infer<typeof PlantPatch>;
