import { z } from "zod";

import { Int64 } from "./int64.ts";
import { decodePageCursor } from "./page-cursor.ts";
import { NEW_PLANT_EXAMPLE, NewPlant, PlantTag } from "./plant.ts";

/** `GET /plants` page size: documented in docs/api-decisions.md and the served OpenAPI document. */
export const LIST_LIMIT_DEFAULT = 100;
export const LIST_LIMIT_MAX = 1000;

// One spelling per integer: no sign on zero (`-0`), as no `+` and no leading zeros.
const INTEGER_TEXT = /^(?:0|-?[1-9]\d*)$/;

/**
 * One value of a path or query parameter: present, and not repeated (a repeated one is an array).
 * Anything else that is not text can only come from a caller of the schema in code, like the client.
 */
const QueryValue = z.string({
  error: (issue) =>
    issue.input === undefined
      ? "is required"
      : Array.isArray(issue.input)
        ? "must be a single value"
        : "must be a string",
});

/**
 * An int64 written in a path or query string. Only plain decimal integers: no `+`, no leading
 * zeros, no `-0`, no spaces, no exponent; the range is checked exactly on the bigint.
 */
export const Int64Text = QueryValue.regex(INTEGER_TEXT, { error: "must be a decimal integer (int64)" })
  .transform((text) => BigInt(text))
  .pipe(Int64);

/**
 * The `after` of `GET /plants`, as text: the opaque cursor of a `Link` header's next link
 * (page-cursor.ts), or a decimal id, the form it had first and still accepted. Either stands for
 * the id after which the page starts.
 */
export const PageCursorText = QueryValue.transform((text, ctx) => {
  if (INTEGER_TEXT.test(text)) return BigInt(text);
  const id = decodePageCursor(text);
  if (id === undefined) {
    ctx.addIssue({
      code: "custom",
      message: "must be the cursor of a Link header's next link, or a decimal id (int64)",
    });
    return z.NEVER;
  }
  return id;
}).pipe(Int64);

const LIMIT_MESSAGE = `must be an integer from 1 to ${LIST_LIMIT_MAX}`;

/**
 * One check and one message, in our words: zod's number checks add their own issue, in their own
 * words, for text such as 99999999999999999999999 that is beyond 2^53 as a number.
 */
const LimitText = QueryValue.transform((text, ctx) => {
  const limit = /^-?\d+$/.test(text) ? Number(text) : Number.NaN;
  if (limit >= 1 && limit <= LIST_LIMIT_MAX) return limit;
  ctx.addIssue({ code: "custom", message: LIMIT_MESSAGE });
  return z.NEVER;
});

/** A tag to filter by: one value (a repeated one is refused like `limit`'s), then a tag's rules. */
const TagText = QueryValue.pipe(PlantTag);

/** The query of `GET /plants`, as strings arrive. Unknown parameters are ignored. */
export const ListPlantsQuery = z.object({
  limit: LimitText.optional(),
  after: PageCursorText.optional(),
  tag: TagText.optional(),
});
export type ListPlantsQuery = z.output<typeof ListPlantsQuery>;

/** The path of `DELETE /plants/{id}`. */
export const PlantIdPath = z.object({ id: Int64Text });

/** The body of a `GET /plants` answer: plants ordered by id, each with its id. */
export const PlantList = z.array(NewPlant).meta({ examples: [[NEW_PLANT_EXAMPLE]] });
export type PlantList = z.infer<typeof PlantList>;
