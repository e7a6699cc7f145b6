import {
  ErrorBody,
  ErrorCodes,
  LIST_LIMIT_DEFAULT,
  LIST_LIMIT_MAX,
  NewPlant,
  Plant,
  type ErrorCodeName,
} from "@plantstore/schema";
import { forEachOpenApiProcedure, generateOpenApiDocument, normalizePath, type OpenAPIObject } from "trpc-to-openapi";
import { createDocument } from "zod-openapi";
import type { AppRouter } from "../router/root.ts";
import type { Meta } from "../trpc.ts";

type Json = Record<string, unknown>;

const errorRef = { $ref: "#/components/schemas/Error" };

/** Which catalogued errors each operation can answer, by status; the document lists them all. */
const AUTH_ERRORS: ErrorCodeName[] = ["MISSING_TOKEN", "INVALID_TOKEN", "INSUFFICIENT_SCOPE", "RATE_LIMITED"];
const SERVER_ERRORS: ErrorCodeName[] = ["INTERNAL", "UNAVAILABLE", "SERVER_BUSY"];

/** Which catalogued errors each operation can answer, by status; the document lists them all. */
const OPERATION_ERRORS: Record<string, ErrorCodeName[]> = {
  "POST /plants": [
    "BAD_REQUEST",
    "MALFORMED_JSON",
    "BODY_NOT_OBJECT",
    "EMPTY_BODY",
    "VALIDATION_FAILED",
    ...AUTH_ERRORS,
    "ID_CONFLICT",
    "BODY_TOO_LARGE",
    "UNSUPPORTED_MEDIA_TYPE",
    ...SERVER_ERRORS,
  ],
  "GET /plants": ["INVALID_PARAMETER", ...AUTH_ERRORS, ...SERVER_ERRORS],
  "DELETE /plants/{id}": ["INVALID_PARAMETER", ...AUTH_ERRORS, "PLANT_NOT_FOUND", ...SERVER_ERRORS],
  // Needs no scope, so never 403.
  "GET /whoami": [...AUTH_ERRORS.filter((code) => code !== "INSUFFICIENT_SCOPE"), ...SERVER_ERRORS],
};

const header = (description: string) => ({ description, schema: { type: "string" } });

/** draft-ietf-httpapi-ratelimit-headers-10 fields, on every answer to a request with an issued token or JWT. */
const RATE_LIMIT_HEADERS: Json = {
  "RateLimit-Policy": header(
    'The per-token quota policy (draft-ietf-httpapi-ratelimit-headers), e.g. `"token";q=6000;w=60`: `q` requests per `w` seconds. ' +
      'On a 429 for failed authentications the policy is `"auth-failures"`.',
  ),
  RateLimit: header('What is left of it, e.g. `"token";r=5999;t=42`: `r` requests remain for `t` more seconds.'),
};

/** Response headers by error status. */
const ERROR_HEADERS: Record<number, Json> = {
  401: {
    "WWW-Authenticate": header(
      'RFC 6750 challenge: `Bearer realm="plantstore"` without a token; `Bearer realm="plantstore", error="invalid_token"` for an unknown, malformed, expired or revoked one.',
    ),
  },
  403: {
    "WWW-Authenticate": header(
      'RFC 6750 challenge naming the missing scope: `Bearer realm="plantstore", error="insufficient_scope", scope="plants:write"`.',
    ),
  },
  429: {
    "Retry-After": { description: "Seconds to wait before retrying.", schema: { type: "integer", minimum: 1 } },
    ...RATE_LIMIT_HEADERS,
  },
};

const BEARER_DESCRIPTION =
  "`Authorization: Bearer <token>`. Accepted: API tokens issued by `plantstore-server tokens create` (`ps_…`, " +
  "scoped and revocable), JWTs from the configured identity provider (scopes from `scope` or `scp`), and the " +
  "development tokens of `PLANTSTORE_TOKENS` (every scope). Scopes: `plants:read` lists plants, " +
  "`plants:write` creates and deletes them; each operation's `security` names the scopes it needs. " +
  "Requests are limited per token, and failed authentications per client address: once an address is over that limit, " +
  "its requests with a token that is not valid get 429 with `Retry-After` (not 401) until the window ends; valid tokens are still served.";

const int64Schema = (description: string) => ({ type: "integer", format: "int64", description });

/** Query and path parameters arrive as text; the document states what the text must hold. */
const PARAMETER_SCHEMAS: Record<string, Record<string, Json>> = {
  "GET /plants": {
    limit: {
      type: "integer",
      format: "int32",
      minimum: 1,
      maximum: LIST_LIMIT_MAX,
      default: LIST_LIMIT_DEFAULT,
      description: `Page size: 1 to ${LIST_LIMIT_MAX}, default ${LIST_LIMIT_DEFAULT}.`,
    },
    after: int64Schema("Only plants with an id strictly greater than this one: the paging cursor."),
    tag: { type: "string", minLength: 1, description: "Only plants with exactly this tag." },
  },
  "DELETE /plants/{id}": { id: int64Schema("Identification number of the plant") },
};

const STATUS_SUMMARY: Record<number, string> = {
  400: "Unexpected error",
  401: "Missing or invalid bearer token",
  403: "The token lacks the required scope",
  404: "No such plant",
  409: "A different plant is already stored under this id",
  413: "The body is larger than the configured limit",
  415: "The body is not application/json",
  429:
    'Rate limited: the token is over its request limit (policy `"token"`), or the token is not valid and the client address ' +
    'is over its failed-authentication limit (policy `"auth-failures"`). A valid token is served whatever its address did, ' +
    "so another caller's wrong guesses from a shared address (NAT, office, proxy) never lock it out.",
  500: "Unexpected server failure",
  503: "The database is unreachable, or the server holds as many connections as it accepts",
};

function errorResponses(codes: ErrorCodeName[]): Json {
  const byStatus = new Map<number, ErrorCodeName[]>();
  for (const code of codes) {
    const status = ErrorCodes[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const responses: Json = {};
  for (const [status, names] of [...byStatus].sort(([a], [b]) => a - b)) {
    const response: Json = {
      // 400 keeps the interface's own wording; the codes each status can carry are in the extension.
      description: STATUS_SUMMARY[status] ?? "Error",
      "x-error-codes": names.map((n) => ({ error: ErrorCodes[n].error, name: n, meaning: ErrorCodes[n].meaning })),
      content: { "application/json": { schema: errorRef } },
    };
    const headers = ERROR_HEADERS[status];
    if (headers !== undefined) response["headers"] = headers;
    responses[String(status)] = response;
  }
  return responses;
}

/**
 * Answers that belong to no operation: a path the document does not list, a listed path with a
 * method it does not list, and failures Node reports before a request reaches an operation. Declared
 * once under `components.responses` (and named in `info.description`) rather than under every
 * operation, which would claim that `POST /plants` itself can answer 404 or 405.
 */
function requestLevelResponses(): Json {
  const response = (code: ErrorCodeName, description: string, headers?: Json): Json => ({
    description,
    "x-error-codes": [{ error: ErrorCodes[code].error, name: code, meaning: ErrorCodes[code].meaning }],
    ...(headers === undefined ? {} : { headers }),
    content: { "application/json": { schema: errorRef } },
  });
  return {
    NotFound: response("NOT_FOUND", "404: no operation exists at this path (paths match exactly and case-sensitively)"),
    MethodNotAllowed: response("METHOD_NOT_ALLOWED", "405: the path exists, not with this method", {
      Allow: header("The methods the path accepts, e.g. `GET, HEAD, POST`."),
    }),
    RequestTimeout: response("REQUEST_TIMEOUT", "408: the request headers or body did not arrive in time"),
    RequestHeaderFieldsTooLarge: response("HEADERS_TOO_LARGE", "431: the request headers are larger than the server accepts"),
  };
}

/** zod-openapi renders `NewPlant` flat; the interface spells it as `allOf` Plant plus `id`. */
function newPlantAsAllOf(flat: Json, plant: Json): Json {
  const properties = (flat["properties"] ?? {}) as Json;
  const plantProperties = new Set(Object.keys((plant["properties"] ?? {}) as Json));
  const own = Object.fromEntries(Object.entries(properties).filter(([k]) => !plantProperties.has(k)));
  const required = ((flat["required"] ?? []) as string[]).filter((k) => !plantProperties.has(k));
  return {
    allOf: [{ $ref: "#/components/schemas/Plant" }, { type: "object", required, properties: own }],
  };
}

/**
 * The served OpenAPI 3.1.0 document. Paths and operations come from the tRPC router through
 * trpc-to-openapi; component schemas come from the shared zod schemas through zod-openapi; and
 * the parts trpc-to-openapi cannot express (a `$ref`'d request body, our `Error` responses,
 * `NewPlant` as `allOf`) are set here. Built once at start-up.
 */
export function buildOpenApiDocument(router: AppRouter, options: { bodyLimitBytes: number }): OpenAPIObject {
  const generated = generateOpenApiDocument(router, {
    title: "OpenAPI Plant Store",
    version: "1.0.0",
    license: { name: "MIT" },
    openApiVersion: "3.1.0",
    baseUrl: "/",
    securitySchemes: { bearerAuth: { type: "http", scheme: "bearer" } },
  }) as unknown as Json;

  // The scopes each operation needs, from the procedures' `meta.scopes`.
  const scopesByOperation = new Map<string, readonly string[]>();
  forEachOpenApiProcedure(router._def.procedures, ({ meta }) => {
    scopesByOperation.set(`${meta.openapi.method} ${normalizePath(meta.openapi.path)}`, (meta as Meta).scopes ?? []);
  });

  const components = createDocument({
    openapi: "3.1.0",
    info: { title: "components", version: "1.0.0" },
    components: { schemas: { Plant, NewPlant, Error: ErrorBody } },
  }).components as Json;
  const schemas = { ...(components["schemas"] as Record<string, Json>) };
  const plant = { ...(schemas["Plant"] as Json) };
  // Plant is also the base of NewPlant's allOf, so it cannot forbid the extra `id` property.
  delete plant["additionalProperties"];
  const error = { ...(schemas["Error"] as Json) };
  delete error["additionalProperties"];
  const errorProperties = { ...(error["properties"] as Record<string, Json>) };
  errorProperties["error"] = {
    type: "integer",
    format: "int32",
    description: "Numeric error indicator",
    minimum: -2147483648,
    maximum: 2147483647,
  };
  error["properties"] = errorProperties;

  const paths = (generated["paths"] ?? {}) as Record<string, Record<string, Json>>;
  for (const [path, operations] of Object.entries(paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      const key = `${method.toUpperCase()} ${path}`;
      const generatedResponses = operation["responses"] as Record<string, Json>;
      const successDescription = (generatedResponses["200"]?.["description"] as string | undefined) ?? "OK";
      const errors = errorResponses(OPERATION_ERRORS[key] ?? ["INTERNAL"]);

      const parameterSchemas = PARAMETER_SCHEMAS[key];
      if (parameterSchemas !== undefined) {
        operation["parameters"] = ((operation["parameters"] ?? []) as Json[]).map((parameter) => ({
          ...parameter,
          schema: parameterSchemas[parameter["name"] as string] ?? parameter["schema"],
        }));
      } else if (Array.isArray(operation["parameters"]) && operation["parameters"].length === 0) {
        delete operation["parameters"];
      }

      if (key === "POST /plants") {
        operation["requestBody"] = {
          required: true,
          description: `A NewPlant as JSON (at most ${options.bodyLimitBytes} bytes). Unknown fields are ignored.`,
          content: { "application/json": { schema: { $ref: "#/components/schemas/NewPlant" } } },
        };
        operation["responses"] = {
          "200": {
            description: successDescription,
            headers: RATE_LIMIT_HEADERS,
            content: { "application/json": { schema: { $ref: "#/components/schemas/Plant" } } },
          },
          ...errors,
        };
      } else if (key === "GET /plants") {
        operation["responses"] = {
          "200": {
            description: successDescription,
            headers: {
              Link: {
                description: 'RFC 8288 link to the next page (`rel="next"`), present only while more plants follow.',
                schema: { type: "string" },
              },
              ...RATE_LIMIT_HEADERS,
            },
            content: {
              "application/json": { schema: { type: "array", items: { $ref: "#/components/schemas/NewPlant" } } },
            },
          },
          ...errors,
        };
      } else if (key === "DELETE /plants/{id}") {
        operation["responses"] = { "204": { description: successDescription, headers: RATE_LIMIT_HEADERS }, ...errors };
      } else if (key === "GET /whoami") {
        operation["responses"] = { "200": { ...generatedResponses["200"], headers: RATE_LIMIT_HEADERS }, ...errors };
      } else {
        operation["responses"] = { ...generatedResponses, ...errors };
      }
      // OpenAPI 3.1 lets a non-OAuth requirement list "role names": here, the scopes needed.
      const scopes = scopesByOperation.get(key);
      if (scopes === undefined) delete operation["security"];
      else operation["security"] = [{ bearerAuth: [...scopes] }];
    }
  }

  return {
    openapi: "3.1.0",
    info: {
      title: "OpenAPI Plant Store",
      license: { name: "MIT" },
      version: "1.0.0",
      description:
        "Every non-2xx response carries an `Error` body whose `error` is a stable code from the catalogue " +
        "(see `x-error-codes` on each response). Integers are exact across the whole int64 range. " +
        "Requests are rate-limited per token (429 with `Retry-After` and the IETF `RateLimit`/`RateLimit-Policy` fields). " +
        "Whatever the path, a path not listed here answers 404 (`#/components/responses/NotFound`), a listed path with " +
        "another method 405 with `Allow` (`MethodNotAllowed`), and requests too slow or with oversized headers 408 or 431.",
    },
    // The page is not an API operation, so it is linked here rather than listed under paths.
    externalDocs: { description: "Interactive API reference: authorize with a token and try requests", url: "./docs" },
    security: [{ bearerAuth: [] }],
    paths,
    webhooks: {
      "/plant/webhook": {
        post: {
          operationId: "newPlant",
          description:
            "Announces a plant added to the store (never an idempotent replay), POSTed to every active subscriber " +
            "(`plantstore-server webhooks add`). Signed per Standard Webhooks: verify `webhook-signature` " +
            "(`v1,<base64 HMAC-SHA256>` of `<webhook-id>.<webhook-timestamp>.<body>` with the `whsec_` secret). " +
            "Delivery is at least once: the same `webhook-id` on every retry, retries with exponential backoff over " +
            "about three days, `Retry-After` honoured, `410 Gone` unsubscribes.",
          parameters: [
            { in: "header", name: "webhook-id", required: true, schema: { type: "string" }, description: "Same on every retry: deduplicate on it." },
            { in: "header", name: "webhook-timestamp", required: true, schema: { type: "string" }, description: "Unix seconds of this attempt." },
            { in: "header", name: "webhook-signature", required: true, schema: { type: "string" }, description: "`v1,<base64>` signatures, space-separated." },
          ],
          requestBody: {
            required: true,
            content: { "application/json": { schema: { $ref: "#/components/schemas/NewPlant" } } },
          },
          responses: {
            "200": { description: "Return a 2xx status to indicate that the data was received successfully" },
            "410": { description: "The subscriber is gone: no further deliveries are sent to it" },
          },
          security: [],
        },
      },
    },
    components: {
      schemas: { ...schemas, Plant: plant, NewPlant: newPlantAsAllOf(schemas["NewPlant"] as Json, plant), Error: error },
      responses: requestLevelResponses(),
      securitySchemes: { bearerAuth: { type: "http", scheme: "bearer", description: BEARER_DESCRIPTION } },
    },
  } as unknown as OpenAPIObject;
}
