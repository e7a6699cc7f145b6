import type { ErrorCodeName } from "@plantstore/schema";

import { AUTHORIZED_CACHE_HEADERS, header, type HeaderDoc, RATE_LIMIT_HEADERS } from "./operation-docs.ts";

type Json = Record<string, unknown>;

// What the served document says about the service as a whole: its title and introduction, the
// bearer scheme, the tags, what each error status means, and the webhook it sends. What it says
// about one operation sits with that operation's procedure (operation-docs.ts); the generator,
// http/openapi-document.ts, only assembles the two.

export const SERVICE_TITLE = "OpenAPI Plant Store";
export const SERVICE_LICENSE = { name: "MIT", identifier: "MIT" } as const;

export const SERVICE_DESCRIPTION =
  "Every non-2xx response carries an `Error` body whose `error` is a stable code from the catalogue " +
  "(see `x-error-codes` on each response).\n\n" +
  "Ids are JSON integers, exact across the whole int64 range. Above 2^53 (9007199254740992) a parser that reads " +
  "numbers as doubles, as JavaScript's `JSON.parse` does, rounds them: read and write ids with a lossless JSON " +
  "parser (e.g. `JSON.parse` with a reviver that reads `context.source`, and `JSON.rawJSON`), and page through " +
  '`GET /plants` by its `Link: <…>; rel="next"` header, whose `after` is an opaque cursor, never by an id you parsed.\n\n' +
  "Requests are rate-limited per token (429 with `Retry-After` and the IETF `RateLimit`/`RateLimit-Policy` fields).\n\n" +
  "Besides the operations listed here the server answers its own paths: `/openapi.json` (this document), `/docs` " +
  "(an interactive reference: authorize with a token and try requests), `/healthz`, `/readyz` and, when enabled, " +
  "`/metrics`. Any other path answers 404 with `error` 40400 (paths match exactly and case-sensitively); a path " +
  "with a method it does not answer, 405 with `error` 40500 and an `Allow` header naming the methods it does, " +
  "`HEAD` wherever `GET` is (listed beside each `GET`). `OPTIONS` on any of these paths answers 204 with `Allow` (and, where `PATCH` is, " +
  "`Accept-Patch`), and `OPTIONS *` 204 with every method the server answers; neither needs a token. " +
  "Every operation may also answer 408, 414 or 431 (shared under `components.responses`) " +
  "and 400 for a request that is not valid HTTP.";

/**
 * What the document says of the `HEAD` it lists beside each `GET` (http/openapi-document.ts): the
 * app answers HEAD wherever it answers GET, with the GET's status and headers and no body.
 */
export function headOperation(get: { path: string; operationId: string; summary: string }): {
  operationId: string;
  summary: string;
  description: string;
} {
  return {
    operationId: `${get.operationId}Head`,
    summary: `${get.summary} (headers only)`,
    description:
      `\`GET ${get.path}\` (\`${get.operationId}\`) without a body (RFC 9110 §9.3.2): the same status and headers, ` +
      "for the same token, scope and parameters, e.g. to learn whether it would answer, or its `ETag` or `Link`, " +
      "without reading what it would send.",
  };
}

export const SERVERS = [
  {
    url: "/",
    description:
      "The server that serves this document: a relative URL, so it stays right behind a proxy that changes the host or scheme.",
  },
];

/** Every tag an operation's `meta.openapi.tags` may name. */
export const TAGS = [
  { name: "plants", description: "The plants in the store: create, list and delete." },
  { name: "credentials", description: "The bearer token a request is made with." },
];

export const BEARER_DESCRIPTION =
  "`Authorization: Bearer <token>`. Accepted: API tokens issued by `plantstore-server tokens create` (`ps_…`, " +
  "scoped and revocable), JWTs from the configured identity provider (scopes from `scope` or `scp`), and the " +
  "development tokens of `PLANTSTORE_TOKENS` (every scope). Scopes: `plants:read` lists plants, " +
  "`plants:write` creates and deletes them; each operation's `security` names the scopes it needs. " +
  "Requests are limited per token, and failed authentications per client address: once an address is over that limit, " +
  "its requests with a token that is not valid get 429 with `Retry-After` (not 401) until the window ends; valid tokens are still served.";

/** The `error` property of the `Error` schema, as the interface states it (zod-openapi's rendering says less). */
export const ERROR_CODE_PROPERTY: Json = {
  type: "integer",
  format: "int32",
  description: "Numeric error indicator",
  minimum: -2147483648,
  maximum: 2147483647,
};

/**
 * The description of an error response, by status, whichever operation answers it; the codes it
 * can carry are listed beside it from the catalogue. A status not here reads "Error".
 */
export const ERROR_STATUS_SUMMARIES: Readonly<Record<number, string>> = {
  // The interface's own wording.
  400: "Unexpected error",
  401: "Missing or invalid bearer token",
  403: "The token lacks the required scope",
  404: "No such plant",
  409: "A different plant is already stored under this id",
  412:
    "A precondition failed: the plant changed since the ETag sent in `If-Match` (or no plant has this id), or " +
    "`If-None-Match` matched it (`*`: any stored plant). Nothing was changed; the `ETag` header is the plant's current tag.",
  413: "The body is larger than the configured limit",
  415:
    "The body is not in the media type the operation reads (`application/json`; `PATCH`: `application/merge-patch+json`), " +
    "or is sent with a Content-Encoding other than identity",
  428: "The change needs `If-Match` with the plant's current `ETag` (`PUT`: or `If-None-Match: *` to create)",
  429:
    'Rate limited: the token is over its request limit (policy `"token"`), or the token is not valid and the client address ' +
    'is over its failed-authentication limit (policy `"auth-failures"`). A valid token is served whatever its address did, ' +
    "so another caller's wrong guesses from a shared address (NAT, office, proxy) never lock it out.",
  500: "Unexpected server failure",
  503:
    "The database is unreachable, busy (a lock or a long statement), out of disk space, read-only or failing its I/O, " +
    "or the server holds as many connections as it accepts; `x-error-codes` names each case. Nothing of a failed " +
    "write is stored; retry after `Retry-After` (a replay of a stored plant answers 200).",
};

/** Response headers of an error response, by status. */
export const ERROR_STATUS_HEADERS: Readonly<Record<number, Readonly<Record<string, HeaderDoc>>>> = {
  401: {
    "WWW-Authenticate": header(
      'RFC 6750 challenge: `Bearer realm="plantstore"` without a token; `Bearer realm="plantstore", error="invalid_token"` for an unknown, malformed, expired or revoked one.',
    ),
    ...AUTHORIZED_CACHE_HEADERS,
  },
  403: {
    "WWW-Authenticate": header(
      'RFC 6750 challenge naming the missing scope: `Bearer realm="plantstore", error="insufficient_scope", scope="plants:write"`.',
    ),
    ...AUTHORIZED_CACHE_HEADERS,
  },
  415: {
    "Accept-Encoding": header(
      "With `error` 41501 (a body sent with a `Content-Encoding`): `identity`, the only content coding read (RFC 9110 §15.5.16).",
    ),
  },
  429: {
    "Retry-After": { description: "Seconds to wait before retrying.", schema: { type: "integer", minimum: 1 } },
    ...RATE_LIMIT_HEADERS,
  },
  503: {
    "Retry-After": {
      description:
        "Seconds to wait before retrying: 1 when the database is unreachable (at once while PostgreSQL's circuit is open) or busy " +
        "or the server is at its connection limit, 5 when its disk is full, it is read-only or its storage fails.",
      schema: { type: "integer", minimum: 1 },
    },
  },
};

/**
 * Errors whose status carries no other code on any operation, because they come before its code
 * runs (REQUEST_ERRORS in operation-docs.ts): each is one component,
 * `#/components/responses/<name>`, that every operation refers to.
 */
export const SHARED_ERROR_RESPONSES: Partial<Record<ErrorCodeName, { name: string; description: string }>> = {
  REQUEST_TIMEOUT: { name: "RequestTimeout", description: "The request headers or body did not arrive in time" },
  URI_TOO_LONG: {
    name: "UriTooLong",
    description: "The request target (path and query) is longer than the server accepts",
  },
  HEADERS_TOO_LARGE: {
    name: "RequestHeaderFieldsTooLarge",
    description: "The request headers are larger than the server accepts",
  },
};

/** The Standard Webhooks headers of every delivery, and what a receiver answers. */
const WEBHOOK_DELIVERY = {
  parameters: [
    {
      in: "header",
      name: "webhook-id",
      required: true,
      schema: { type: "string" },
      description: "Same on every retry: deduplicate on it.",
    },
    {
      in: "header",
      name: "webhook-timestamp",
      required: true,
      schema: { type: "string" },
      description: "Unix seconds of this attempt.",
    },
    {
      in: "header",
      name: "webhook-signature",
      required: true,
      schema: { type: "string" },
      description: "`v1,<base64>` signatures, space-separated.",
    },
  ],
  responses: {
    "200": { description: "Return a 2xx status to indicate that the data was received successfully" },
    "410": { description: "The subscriber is gone: no further deliveries are sent to it" },
  },
  security: [],
};

const SIGNED_AND_RETRIED =
  "Signed per Standard Webhooks: verify `webhook-signature` " +
  "(`v1,<base64 HMAC-SHA256>` of `<webhook-id>.<webhook-timestamp>.<body>` with the `whsec_` secret). " +
  "Delivery is at least once: the same `webhook-id` on every retry, retries with exponential backoff over " +
  "about three days, `Retry-After` honoured, `410 Gone` unsubscribes.";

const EXAMPLE_TIMESTAMP = "2026-05-01T12:00:00.000Z";

/** A Standard Webhooks event `{type, timestamp, data}`, for subscribers that chose their event types. */
function eventWebhook(
  type: "plant.created" | "plant.updated" | "plant.deleted",
  operationId: string,
  summary: string,
  what: string,
  data: Json,
  example: Json,
): Json {
  return {
    post: {
      operationId,
      summary,
      description:
        `${what} Sent to every active subscriber that chose \`${type}\` ` +
        "(`plantstore-server webhooks add <url> --events plant.created,plant.updated,plant.deleted`), in the " +
        "same transaction as the change (an outbox): one event per committed change, none for a change that " +
        "changed nothing. Retries can reorder events: order them by `timestamp`. " +
        SIGNED_AND_RETRIED,
      ...WEBHOOK_DELIVERY,
      requestBody: {
        required: true,
        content: {
          "application/json": {
            schema: {
              type: "object",
              required: ["type", "timestamp", "data"],
              properties: {
                type: { type: "string", const: type, description: "The event type." },
                timestamp: {
                  type: "string",
                  format: "date-time",
                  description: "When the change was committed, RFC 3339 in UTC.",
                },
                data,
              },
            },
            examples: { [operationId]: { summary, value: { type, timestamp: EXAMPLE_TIMESTAMP, data: example } } },
          },
        },
      },
    },
  };
}

const PLANT_EXAMPLE = { id: 10, name: "Monstera", tag: "indoor" };

/** What the server POSTs to webhook subscribers (webhooks/), as OpenAPI 3.1 `webhooks`. */
export const WEBHOOKS: Json = {
  "/plant/webhook": {
    post: {
      operationId: "newPlant",
      summary: "A plant was added",
      description:
        "Announces a plant added to the store (never an idempotent replay) as the bare plant, POSTed to every " +
        "active subscriber added without `--events` (`plantstore-server webhooks add <url>`), as to every " +
        "subscriber added before event types existed; such a subscriber receives nothing else. " +
        SIGNED_AND_RETRIED,
      ...WEBHOOK_DELIVERY,
      requestBody: {
        required: true,
        content: { "application/json": { schema: { $ref: "#/components/schemas/NewPlant" } } },
      },
    },
  },
  "plant.created": eventWebhook(
    "plant.created",
    "plantCreated",
    "A plant was added (event)",
    "Announces a plant added to the store (by `POST /plants`, never an idempotent replay, or by a `PUT` that " +
      "created it); `data` is the plant.",
    { $ref: "#/components/schemas/NewPlant" },
    PLANT_EXAMPLE,
  ),
  "plant.updated": eventWebhook(
    "plant.updated",
    "plantUpdated",
    "A plant was changed (event)",
    "Announces a plant changed by `PATCH` or replaced by `PUT`; `data` is the plant as it is after the change " +
      "(no `tag` when the change removed it).",
    { $ref: "#/components/schemas/NewPlant" },
    { ...PLANT_EXAMPLE, name: "Monstera deliciosa" },
  ),
  "plant.deleted": eventWebhook(
    "plant.deleted",
    "plantDeleted",
    "A plant was deleted (event)",
    "Announces a plant deleted by `DELETE /plants/{id}`; `data` holds its id alone.",
    {
      type: "object",
      required: ["id"],
      properties: {
        id: { type: "integer", format: "int64", description: "Identification number of the deleted plant" },
      },
    },
    { id: 10 },
  ),
};
