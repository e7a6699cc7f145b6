import {
  encodePageCursor,
  LIST_LIMIT_DEFAULT,
  LIST_LIMIT_MAX,
  ListPlantsQuery,
  NEW_PLANT_EXAMPLE,
  NewPlant,
  PAGE_CURSOR_PATTERN,
  Plant,
  PlantIdPath,
  PlantList,
} from "@plantstore/schema";
import { z } from "zod";

import { ApiError, toTRPCError } from "../errors.ts";
import {
  AUTH_ERRORS,
  AUTHORIZED_CACHE_HEADERS,
  header,
  int64Parameter,
  RATE_LIMIT_HEADERS,
  REQUEST_ERRORS,
  SERVER_ERRORS,
} from "../operation-docs.ts";
import type { ListedPlant } from "../storage/plant-store.ts";
import { protectedProcedure } from "../trpc.ts";
import {
  CREATED_ETAG,
  EVALUATION_ORDER,
  ifMatchParameter,
  plantByIdRouter,
  preconditionFailed,
} from "./plant-by-id.ts";

/**
 * RFC 8288 `Link` to the next page as a root-relative reference: it keeps the host and scheme the
 * caller used (so it survives a proxy that changes them), but not a path prefix a proxy adds. The
 * client reads only its query, which survives both. `after` is the opaque cursor, not the id: a
 * caller passes it back as text, so a JSON parser that rounds ids above 2^53 cannot make it loop.
 */
function nextLink(limit: number, after: bigint | number, tag: string | undefined): string {
  const query = new URLSearchParams({ limit: String(limit), after: encodePageCursor(BigInt(after)) });
  if (tag !== undefined) query.set("tag", tag);
  return `</plants?${query.toString()}>; rel="next"`;
}

/**
 * The list's output check: the shape of each plant, not its text rules. Every stored plant passed
 * NewPlant (lengths, well-formed text) on its way in; re-running those refinements on each of up to
 * 1,000 plants per page cost more than the query itself (measured: ~60 µs of a 100-plant page).
 * One plain function over the page rather than a zod object per plant: no copy of each plant, and
 * ids may be bigints or safe-integer numbers (storage/plant-store.ts, ListedPlant), which a zod
 * union checked at 3-4x the cost (100 plants: ~0.5-1.7 µs against 5-7.5 for `z.object`, 18-21
 * for the union). The served document still describes the items as `NewPlant` (`documentedOutput`).
 */
function isListedPlant(value: unknown): value is ListedPlant {
  if (typeof value !== "object" || value === null) return false;
  const { id, name, tag } = value as Record<string, unknown>;
  return (
    (typeof id === "bigint" || Number.isSafeInteger(id)) &&
    typeof name === "string" &&
    (tag === undefined || typeof tag === "string")
  );
}

// The meta only lets the document generator pass over it: the served schema is `documentedOutput`.
const StoredPlantPage = z
  .custom<ListedPlant[]>((value) => Array.isArray(value) && value.every(isListedPlant), "a page of stored plants")
  .meta({ type: "array" });

export const plantsRouter = {
  create: protectedProcedure
    .meta({
      openapi: {
        method: "POST",
        path: "/plants",
        protect: true,
        operationId: "createPlant",
        summary: "Create a plant",
        tags: ["plants"],
        description: "Creates a new plant in the store",
        successDescription: "Plant response",
      },
      scopes: ["plants:write"],
      errors: [
        "BAD_REQUEST",
        "MALFORMED_JSON",
        "BODY_NOT_OBJECT",
        "EMPTY_BODY",
        "VALIDATION_FAILED",
        ...AUTH_ERRORS,
        "ID_CONFLICT",
        "BODY_TOO_LARGE",
        "UNSUPPORTED_MEDIA_TYPE",
        "UNSUPPORTED_CONTENT_ENCODING",
        ...REQUEST_ERRORS,
        ...SERVER_ERRORS,
      ],
      requestBodyDescription: ({ bodyLimitBytes }) =>
        `A NewPlant as JSON (at most ${bodyLimitBytes} bytes), sent without a Content-Encoding (or \`identity\`). ` +
        "Unknown fields are ignored. A replayed `POST` (the same id, name and tag) answers 200 again, and a different " +
        "plant under a stored id 409: a replayed POST is compared with the plant as it is now, after any `PATCH` or " +
        "`PUT` since, not as it was first created. An `id` above 2^53 must be written as its exact digits, which JavaScript's " +
        "`JSON.stringify` cannot do for a number: use a lossless JSON writer (e.g. `JSON.rawJSON`).",
      successHeaders: RATE_LIMIT_HEADERS,
    })
    .input(NewPlant)
    .output(Plant)
    .mutation(async ({ ctx, input }) => {
      const outcome = await ctx.store.create(input);
      if (outcome === "conflict") {
        throw toTRPCError(
          new ApiError("ID_CONFLICT", `a plant with id ${input.id} is already stored with a different name or tag`),
        );
      }
      // `created` and `replayed` answer alike: a retry of the same request is indistinguishable from the first.
      return input.tag === undefined ? { name: input.name } : { name: input.name, tag: input.tag };
    }),

  list: protectedProcedure
    .meta({
      openapi: {
        method: "GET",
        path: "/plants",
        protect: true,
        operationId: "listPlants",
        summary: "List plants",
        tags: ["plants"],
        description:
          'Lists plants ordered by id, a page at a time. Page by following the `Link: <…>; rel="next"` header, present while ' +
          "more plants follow: request its target, or pass its `after` back unchanged. `after` is an opaque cursor; the " +
          "decimal id of the last plant seen is still accepted there, but ids above 2^53 are exact only through a lossless " +
          "JSON parser (JavaScript's `JSON.parse` rounds them, and a rounded id can repeat or skip plants).",
        successDescription: "Plants, ordered by id",
      },
      scopes: ["plants:read"],
      errors: ["INVALID_PARAMETER", ...AUTH_ERRORS, ...REQUEST_ERRORS, ...SERVER_ERRORS],
      parameterSchemas: {
        limit: {
          type: "integer",
          format: "int32",
          minimum: 1,
          maximum: LIST_LIMIT_MAX,
          default: LIST_LIMIT_DEFAULT,
          description: `Page size: 1 to ${LIST_LIMIT_MAX}, default ${LIST_LIMIT_DEFAULT}.`,
          examples: [20],
        },
        // Both forms, so a client generated from the earlier document, which typed `after` as an
        // int64, still compiles and is still answered (see the changeset of the cursor).
        after: {
          // A cursor as the server writes it, of the id just below the example plant's: the page starts at that plant.
          examples: [encodePageCursor(BigInt(NEW_PLANT_EXAMPLE.id) - 1n)],
          description:
            "Where the page starts: the `after` of the previous page's `Link` header (opaque), or the decimal id of the last plant seen.",
          anyOf: [
            {
              type: "string",
              minLength: 1,
              // Exactly what the server writes, so contract tools stop sending forged cursors.
              pattern: PAGE_CURSOR_PATTERN,
              description: 'An opaque cursor, as the `Link: <…>; rel="next"` header carries it.',
            },
            { type: "integer", format: "int64", description: "Only plants with an id strictly greater than this one." },
          ],
        },
        tag: {
          type: "string",
          minLength: 1,
          description: "Only plants with exactly this tag.",
          examples: [NEW_PLANT_EXAMPLE.tag],
        },
      },
      successHeaders: {
        Link: {
          description:
            'RFC 8288 link to the next page (`rel="next"`), present only while more plants follow, e.g. ' +
            '`</plants?limit=100&after=v1.AAAAAAAAAGQ>; rel="next"`: a root-relative target whose `after` is an opaque cursor.',
          schema: { type: "string" },
        },
        ...RATE_LIMIT_HEADERS,
        ...AUTHORIZED_CACHE_HEADERS,
      },
      documentedOutput: PlantList,
    })
    .input(ListPlantsQuery)
    .output(StoredPlantPage)
    .query(async ({ ctx, input }) => {
      const limit = input.limit ?? LIST_LIMIT_DEFAULT;
      // One row more than asked tells whether a next page exists, without a count.
      const rows = await ctx.store.list({ limit: limit + 1, after: input.after, tag: input.tag });
      const page = rows.slice(0, limit);
      const last = page.at(-1);
      if (rows.length > limit && last !== undefined)
        ctx.responseHeaders.set("Link", nextLink(limit, last.id, input.tag));
      return page;
    }),

  ...plantByIdRouter,

  delete: protectedProcedure
    .meta({
      openapi: {
        method: "DELETE",
        path: "/plants/{id}",
        protect: true,
        operationId: "deletePlant",
        summary: "Delete a plant",
        tags: ["plants"],
        description:
          "Deletes the plant with this id; the id is free for a new plant afterwards. With `If-Match`, only if the plant " +
          "is still as read (its current `ETag`, or `*`): a stale tag is 412 with the current `ETag`, and the plant stays. " +
          "With `If-None-Match`, only if it names none of the plant's tags (weak comparison): a match is 412 likewise, and " +
          "`If-None-Match: *` is always 412 for a stored plant. Neither is required. A 404 or a 412 tells whether a plant " +
          "has this id, which any writer learns by design (creating tells it too); the `ETag` is opaque and tells nothing " +
          "of the plant's content. " +
          EVALUATION_ORDER,
        successDescription: "Deleted",
      },
      scopes: ["plants:write"],
      errors: [
        "INVALID_PARAMETER",
        ...AUTH_ERRORS,
        "PLANT_NOT_FOUND",
        "PRECONDITION_FAILED",
        ...REQUEST_ERRORS,
        ...SERVER_ERRORS,
      ],
      headerParameters: [
        ifMatchParameter(
          "Optional: the plant's current `ETag` (or `*`); the plant is deleted only if it still matches (strong comparison).",
          CREATED_ETAG,
          false,
        ),
      ],
      errorHeaders: {
        412: { ETag: header("The plant's current entity tag, to read it again and decide.") },
      },
      // The plant createPlant's example creates, so a generated collection deletes what it made.
      parameterSchemas: { id: int64Parameter("Identification number of the plant", NEW_PLANT_EXAMPLE.id) },
      successHeaders: RATE_LIMIT_HEADERS,
    })
    .input(PlantIdPath)
    .output(z.void())
    .mutation(async ({ ctx, input }) => {
      const { ifMatch, ifNoneMatch } = ctx.preconditions;
      const outcome = await ctx.store.delete(input.id, ifMatch, ifNoneMatch);
      if (typeof outcome === "object") {
        // A plant that is gone is 404 whatever the condition said (RFC 9110 §13.2.2).
        if (outcome.current !== undefined) await preconditionFailed(ctx, input.id, outcome, ctx.preconditions);
        throw toTRPCError(new ApiError("PLANT_NOT_FOUND", `no plant with id ${input.id} is stored`));
      }
      if (outcome === "not_found") {
        throw toTRPCError(new ApiError("PLANT_NOT_FOUND", `no plant with id ${input.id} is stored`));
      }
    }),
};
