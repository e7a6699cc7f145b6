import { NEW_PLANT_EXAMPLE, NewPlant, Plant, PlantIdPath, PlantPatch } from "@plantstore/schema";

import { ApiError, toTRPCError } from "../errors.ts";
import {
  AUTH_ERRORS,
  AUTHORIZED_CACHE_HEADERS,
  header,
  type HeaderDoc,
  int64Parameter,
  RATE_LIMIT_HEADERS,
  REQUEST_ERRORS,
  SERVER_ERRORS,
} from "../operation-docs.ts";
import { ifNoneMatchMatches, type Preconditions } from "../preconditions.ts";
import type { PreconditionFailed, WriteOutcome } from "../storage/plant-store.ts";
import type { Context } from "../trpc.ts";
import { protectedProcedure } from "../trpc.ts";

/** The media type of a JSON merge patch (RFC 7396), the only one PATCH reads. */
const MERGE_PATCH_MEDIA_TYPE = "application/merge-patch+json";

/** Where a plant is read, as `Location` names it: root-relative, like the list's `Link`. */
const plantLocation = (id: bigint): string => `/plants/${id}`;

/**
 * The merge patch as three generated clients send it, shown in PATCH's description and the client
 * README (e2e/test/generated-clients.test.ts runs each and checks both say the same): openapi-fetch
 * sends `application/json` unless told otherwise, which is 415 here.
 */
const GENERATED_CLIENT_PATCHES = [
  "```ts",
  "// openapi-fetch (types from openapi-typescript): name the media type, or it sends application/json",
  'const patched = await client.PATCH("/plants/{id}", {',
  '  params: { path: { id }, header: { "If-Match": etag } },',
  '  headers: { "Content-Type": "application/merge-patch+json" },',
  "  body: { tag: null },",
  "});",
  "```",
  "",
  "```ts",
  "// @hey-api/openapi-ts (client-fetch and sdk plugins): sends this operation's media type by itself",
  'const patched = await updatePlant({ client, path: { id }, headers: { "If-Match": etag }, body: { tag: null } });',
  "```",
  "",
  "```ts",
  "// orval (fetch client): sends this operation's media type by itself",
  'const patched = await updatePlant(id, { tag: null }, { headers: { "If-Match": etag } });',
  "```",
].join("\n");

/**
 * RFC 9110 §13.2.2's order, as every operation on one plant follows it; the document and the
 * README say the same.
 */
export const EVALUATION_ORDER =
  "Evaluation order (RFC 9110 §13.2): the token and its scope (401, 403), then the request itself " +
  "(400, 415), then whether the plant exists (404, whatever the preconditions say; a `PUT` with `If-Match` " +
  "on a free id is 412, as a `PUT` could create it), then the preconditions in RFC 9110 §13.2.2's order, " +
  "`If-Match` (strong comparison) before `If-None-Match` (weak comparison; `*` matches any stored plant), each " +
  "evaluated on every method (412, or 304 for a read), then whether the precondition a change needs was sent " +
  "(428), and only then the change, which is checked and written in one atomic step, across instances on one " +
  "PostgreSQL too.";

/** How a change treats `If-None-Match`, for the descriptions of PATCH and PUT. */
const IF_NONE_MATCH_ON_WRITES =
  "An `If-None-Match` is evaluated too: when it matches the plant's current tag, or is `*` and the plant is " +
  "stored, the answer is 412 and nothing changes.";

// Examples that follow the document's order: create the example plant, read it, patch its tag
// (If-Match: the tag of the plant as created), replace it with the created plant again (If-Match:
// the patched one's), delete it (If-Match: the created one's again). A real tag is keyed by the
// store's own secret, so these are made up, in the form the server answers; a client sends the
// `ETag` its server gave it.
export const CREATED_ETAG = '"1BFClo4-oMIIE5tfEyXKsEjqaav"';
const PATCHED_ETAG = '"ZEqp11BvBZuzdtWsWPCJK1riuYS"';

const ETAG_HEADER = header(
  "The plant's strong entity tag (RFC 9110 §8.8.3), opaque: it changes with every change of the plant's content and is " +
    "the same on every instance of the store for the same content, but is keyed by a secret of the store, so it cannot " +
    "be computed from, nor tells anything about, the content. Send it back in `If-Match` to change the plant only as read.",
);
const CURRENT_ETAG: Readonly<Record<string, HeaderDoc>> = {
  ETag: header("The plant's current entity tag, to read it again and retry (absent when no plant has this id)."),
};

export const ifMatchParameter = (description: string, example: string, required: boolean) => ({
  name: "If-Match",
  in: "header",
  required,
  description,
  schema: { type: "string", examples: [example] },
});

const ID_PARAMETER = { id: int64Parameter("Identification number of the plant", NEW_PLANT_EXAMPLE.id) };

const notFound = (id: bigint) => toTRPCError(new ApiError("PLANT_NOT_FOUND", `no plant with id ${id} is stored`));

/** An If-Match or If-None-Match as sent, for messages. */
const show = (value: "*" | readonly string[]): string => (value === "*" ? "*" : value.join(", "));

/**
 * The 412 of a refused condition, carrying the current tag so the caller can re-read and retry.
 * Its message names the header that failed, If-Match first as RFC 9110 §13.2.2 evaluates it.
 */
export async function preconditionFailed(
  ctx: Context,
  id: bigint,
  refused: PreconditionFailed,
  preconditions: Preconditions,
): Promise<never> {
  const { current } = refused;
  const { ifMatch, ifNoneMatch } = preconditions;
  if (current === undefined) {
    // Only If-Match can fail where no plant is stored.
    const sent = `If-Match: ${show(ifMatch ?? "*")}`;
    throw toTRPCError(new ApiError("PRECONDITION_FAILED", `no plant with id ${id} is stored, so ${sent} fails`));
  }
  const etag = await ctx.store.etag(current);
  let message: string;
  if (ifMatch !== undefined && ifMatch !== "*" && !ifMatch.includes(etag))
    message = `the plant with id ${id} is now ETag ${etag}, which If-Match: ${show(ifMatch)} does not name`;
  else if (ifNoneMatch === "*")
    message = `a plant with id ${id} is already stored (ETag ${etag}), so If-None-Match: * fails`;
  else message = `the plant with id ${id} is ETag ${etag}, which If-None-Match: ${show(ifNoneMatch ?? [])} names`;
  throw toTRPCError(new ApiError("PRECONDITION_FAILED", message, { headers: { ETag: etag } }));
}

/**
 * For a change sent without the precondition it needs: an `If-None-Match` is still evaluated
 * (RFC 9110 §13.1.2), so a matching one is 412 before the 428. Only a read: nothing is written.
 */
async function evaluateIfNoneMatchAlone(ctx: Context, id: bigint, stored?: NewPlant): Promise<void> {
  const { ifNoneMatch } = ctx.preconditions;
  if (ifNoneMatch === undefined) return;
  const current = stored ?? (await ctx.store.get(id));
  if (current !== undefined && ifNoneMatchMatches(ifNoneMatch, await ctx.store.etag(current))) {
    await preconditionFailed(ctx, id, { outcome: "precondition_failed", current }, ctx.preconditions);
  }
}

/** The answer to a write: the plant as stored, with its tag; 201 when it was created. */
async function written(ctx: Context, id: bigint, outcome: WriteOutcome): Promise<NewPlant> {
  if (outcome.outcome === "not_found") throw notFound(id);
  if (outcome.outcome === "precondition_failed") return preconditionFailed(ctx, id, outcome, ctx.preconditions);
  ctx.responseHeaders.set("ETag", await ctx.store.etag(outcome.plant));
  if (outcome.created) {
    ctx.response.status = 201;
    ctx.responseHeaders.set("Location", plantLocation(id));
  }
  return outcome.plant;
}

const PLANT_ERRORS = ["INVALID_PARAMETER", ...AUTH_ERRORS, "PLANT_NOT_FOUND"] as const;
const BODY_ERRORS = [
  "MALFORMED_JSON",
  "BODY_NOT_OBJECT",
  "EMPTY_BODY",
  "VALIDATION_FAILED",
  "BODY_TOO_LARGE",
  "UNSUPPORTED_MEDIA_TYPE",
  "UNSUPPORTED_CONTENT_ENCODING",
] as const;

export const plantByIdRouter = {
  get: protectedProcedure
    .meta({
      openapi: {
        method: "GET",
        path: "/plants/{id}",
        protect: true,
        operationId: "getPlant",
        summary: "Read a plant",
        tags: ["plants"],
        description:
          "Reads the plant with this id (the same shape as a list item, with an exact int64 id) and its `ETag`. " +
          "With `If-None-Match` naming its current tag (weak comparison) or `*`, answers 304 without a body, so a " +
          "client holding the plant reads nothing again. `HEAD` answers the same headers without the body. " +
          EVALUATION_ORDER,
        successDescription: "The plant",
      },
      scopes: ["plants:read"],
      errors: [...PLANT_ERRORS, "PRECONDITION_FAILED", ...REQUEST_ERRORS, ...SERVER_ERRORS],
      parameterSchemas: ID_PARAMETER,
      headerParameters: [
        {
          name: "If-None-Match",
          required: false,
          description:
            "`*` or the entity tags the client holds (RFC 9110 §13.1.2): when one matches the plant's (weak comparison), " +
            "the answer is 304 with the `ETag` and no body.",
          schema: { type: "string", examples: [PATCHED_ETAG] },
        },
        ifMatchParameter(
          "`*` or entity tags (RFC 9110 §13.1.1): the plant is answered only if one of them is its current tag (strong comparison), else 412.",
          CREATED_ETAG,
          false,
        ),
      ],
      successHeaders: { ETag: ETAG_HEADER, ...RATE_LIMIT_HEADERS, ...AUTHORIZED_CACHE_HEADERS },
      otherSuccesses: {
        "304": {
          description: "Not modified: `If-None-Match` matched the plant's current tag; no body",
          headers: { ETag: ETAG_HEADER, ...RATE_LIMIT_HEADERS, ...AUTHORIZED_CACHE_HEADERS },
        },
      },
      errorHeaders: { 412: CURRENT_ETAG },
    })
    .input(PlantIdPath)
    .output(NewPlant)
    .query(async ({ ctx, input }) => {
      const plant = await ctx.store.get(input.id);
      if (plant === undefined) throw notFound(input.id);
      const { ifMatch, ifNoneMatch } = ctx.preconditions;
      const etag = await ctx.store.etag(plant);
      if (ifMatch !== undefined && ifMatch !== "*" && !ifMatch.includes(etag)) {
        await preconditionFailed(ctx, input.id, { outcome: "precondition_failed", current: plant }, ctx.preconditions);
      }
      ctx.responseHeaders.set("ETag", etag);
      // The plant is still the output, for callers in process; the adapter sends a 304 without it.
      if (ifNoneMatch !== undefined && ifNoneMatchMatches(ifNoneMatch, etag)) ctx.response.status = 304;
      return plant;
    }),

  update: protectedProcedure
    .meta({
      openapi: {
        method: "PATCH",
        path: "/plants/{id}",
        protect: true,
        operationId: "updatePlant",
        summary: "Change a plant",
        tags: ["plants"],
        description:
          "Changes the plant with a JSON merge patch (RFC 7396, `Content-Type: application/merge-patch+json`): `name` and " +
          '`tag` may change, `"tag": null` removes the tag, a field left out keeps its value. `If-Match` with the plant\'s ' +
          "current `ETag` is required (428 without), so no change is made over one the client has not seen: a stale tag " +
          "is 412 with the current `ETag`; read the plant again and retry. Needs `plants:read` as well as " +
          "`plants:write`: the answer is the whole plant, fields the patch did not send included. " +
          IF_NONE_MATCH_ON_WRITES +
          " It does not stand in for `If-Match`: one that does not match still leaves the change needing `If-Match` " +
          "(428). " +
          EVALUATION_ORDER +
          "\n\nA body sent as `application/json` is 415 (with `Accept-Patch`): a merge patch has its own media type " +
          "(RFC 7396), so a plain JSON body is never taken for one. Clients generated from this document send it so:\n\n" +
          GENERATED_CLIENT_PATCHES,
        successDescription: "The plant as changed",
      },
      scopes: ["plants:read", "plants:write"],
      errors: [
        ...PLANT_ERRORS,
        ...BODY_ERRORS,
        "PRECONDITION_FAILED",
        "PRECONDITION_REQUIRED",
        ...REQUEST_ERRORS,
        ...SERVER_ERRORS,
      ],
      parameterSchemas: ID_PARAMETER,
      headerParameters: [
        ifMatchParameter(
          "The plant's current `ETag` (or `*` for whatever is stored): the change is made only if it still matches (strong comparison).",
          CREATED_ETAG,
          true,
        ),
      ],
      requestMediaType: MERGE_PATCH_MEDIA_TYPE,
      requestBodyDescription: ({ bodyLimitBytes }) =>
        `A JSON merge patch of the plant (at most ${bodyLimitBytes} bytes), sent as \`application/merge-patch+json\`. ` +
        "`name` and `tag` follow the rules of `POST /plants`; `null` for `tag` removes it. `id` may not be sent (400): " +
        "the path names the plant. Any other field is refused too (400), unlike `POST /plants`, which ignores unknown " +
        "fields: a misspelt field would otherwise answer 200 and change nothing.",
      documentedBody: PlantPatch,
      successHeaders: { ETag: ETAG_HEADER, ...RATE_LIMIT_HEADERS },
      errorHeaders: {
        412: CURRENT_ETAG,
        415: {
          "Accept-Patch": header(
            "With `error` 41500: `application/merge-patch+json`, the patch format this operation reads (RFC 5789 §3.1).",
          ),
          "Accept-Encoding": header(
            "With `error` 41501 (a body sent with a `Content-Encoding`): `identity`, the only content coding read (RFC 9110 §15.5.16).",
          ),
        },
      },
    })
    // Strict like PlantPatch itself (the path's id joins the body's fields here).
    .input(PlantIdPath.extend(PlantPatch.shape).strict())
    .output(NewPlant)
    .mutation(async ({ ctx, input }) => {
      const { id, ...change } = input;
      const { ifMatch, ifNoneMatch } = ctx.preconditions;
      if (ifMatch === undefined) {
        // 404 before 428 (RFC 9110 §13.2.1): a caller learns the plant is gone before being asked for its tag.
        const stored = await ctx.store.get(id);
        if (stored === undefined) throw notFound(id);
        await evaluateIfNoneMatchAlone(ctx, id, stored);
        throw toTRPCError(
          new ApiError(
            "PRECONDITION_REQUIRED",
            "PATCH needs If-Match with the plant's current ETag (read it with GET /plants/{id}), so it cannot overwrite a change it has not seen",
          ),
        );
      }
      const outcome = await ctx.store.update(id, change, ifMatch, ifNoneMatch);
      // A plant deleted since the tag was read is gone whatever the tag says: 404 before 412.
      if (outcome.outcome === "precondition_failed" && outcome.current === undefined) throw notFound(id);
      return written(ctx, id, outcome);
    }),

  replace: protectedProcedure
    .meta({
      openapi: {
        method: "PUT",
        path: "/plants/{id}",
        protect: true,
        operationId: "replacePlant",
        summary: "Replace or create a plant",
        tags: ["plants"],
        description:
          "Stores the body as the plant with this id. With `If-Match` (the plant's current `ETag`, or `*`), replaces the " +
          "stored plant (200; 412 when the tag is stale or no plant has this id). With `If-None-Match: *`, creates the " +
          "plant only if the id is free (201 with `Location` and `ETag`; 412 with the stored plant's `ETag` when it is " +
          "taken). Without either, 428: a replacement must say which plant it replaces. Both at once are evaluated " +
          "like any other pair, `If-Match` first, so they always answer 412 (a plant cannot be both stored and " +
          "absent). " +
          IF_NONE_MATCH_ON_WRITES +
          " Naming tags, it stands in for neither: one that does not match still leaves the request needing `If-Match` " +
          "(428). With `plants:write` alone, a token learns no content it did not send: the answer is the plant as " +
          "sent, and a 412 carries only the opaque `ETag`, which tells that the id is taken (as `POST /plants` would) " +
          "and which revision is stored. " +
          EVALUATION_ORDER,
        successDescription: "The plant as replaced",
      },
      scopes: ["plants:write"],
      errors: [
        "INVALID_PARAMETER",
        ...AUTH_ERRORS,
        ...BODY_ERRORS,
        "PRECONDITION_FAILED",
        "PRECONDITION_REQUIRED",
        ...REQUEST_ERRORS,
        ...SERVER_ERRORS,
      ],
      parameterSchemas: ID_PARAMETER,
      // Both preconditions are declared, each with its example, and a request sends one of them:
      // a tool that sends every documented header at once (a Postman collection as imported) is
      // left to choose, as its user chooses between replacing and creating.
      headerParameters: [
        ifMatchParameter(
          "Replace: the plant's current `ETag` (or `*` for whatever is stored), compared strongly. Send it or " +
            "`If-None-Match: *`, not both; without either, 428.",
          PATCHED_ETAG,
          false,
        ),
        {
          name: "If-None-Match",
          required: false,
          description:
            "Create: `*`, sent without `If-Match`: the plant is stored only if no plant has this id (201 with `Location`), " +
            "else 412 with the stored plant's `ETag`.",
          schema: { type: "string", examples: ["*"] },
        },
      ],
      requestBodyDescription: ({ bodyLimitBytes }) =>
        `The plant (at most ${bodyLimitBytes} bytes) as JSON, under the rules of \`POST /plants\`; without a \`tag\`, the ` +
        "stored plant has none. `id` may not be sent (400): the path names the plant. Other unknown fields are ignored.",
      documentedBody: Plant,
      successHeaders: { ETag: ETAG_HEADER, ...RATE_LIMIT_HEADERS },
      otherSuccesses: {
        "201": {
          description: "Created (`If-None-Match: *` on a free id)",
          headers: {
            ETag: ETAG_HEADER,
            Location: header("Where the new plant is read: `/plants/{id}`."),
            ...RATE_LIMIT_HEADERS,
          },
        },
      },
      errorHeaders: { 412: CURRENT_ETAG },
    })
    .input(PlantIdPath.extend(Plant.shape))
    .output(NewPlant)
    .mutation(async ({ ctx, input }) => {
      const { ifMatch, ifNoneMatch } = ctx.preconditions;
      const plant: NewPlant = input.tag === undefined ? { id: input.id, name: input.name } : input;
      if (ifMatch !== undefined)
        return written(ctx, input.id, await ctx.store.replace(plant, { ifMatch, ifNoneMatch }));
      if (ifNoneMatch === "*") return written(ctx, input.id, await ctx.store.replace(plant, { ifNoneMatch }));
      await evaluateIfNoneMatchAlone(ctx, input.id);
      throw toTRPCError(
        new ApiError(
          "PRECONDITION_REQUIRED",
          "PUT needs If-Match with the plant's current ETag to replace it, or If-None-Match: * to create it",
        ),
      );
    }),
};
