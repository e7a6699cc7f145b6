import { ErrorBody, ErrorCodes, NewPlant, Plant, type ErrorCodeName } from "@plantstore/schema";
import {
  forEachOpenApiProcedure,
  generateOpenApiDocument,
  getInputOutputParsers,
  instanceofZodTypeKind,
  normalizePath,
  type OpenAPIObject,
  type OpenApiProcedure,
} from "trpc-to-openapi";
import { globalRegistry, ZodType } from "zod";
import { createDocument, createSchema } from "zod-openapi";
import { header, RATE_LIMIT_HEADERS } from "../operation-docs.ts";
import type { AppRouter } from "../router/root.ts";
import type { Meta } from "../trpc.ts";

type Json = Record<string, unknown>;

const errorRef = { $ref: "#/components/schemas/Error" };

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

const BEARER_DESCRIPTION =
  "`Authorization: Bearer <token>`. Accepted: API tokens issued by `plantstore-server tokens create` (`ps_…`, " +
  "scoped and revocable), JWTs from the configured identity provider (scopes from `scope` or `scp`), and the " +
  "development tokens of `PLANTSTORE_TOKENS` (every scope). Scopes: `plants:read` lists plants, " +
  "`plants:write` creates and deletes them; each operation's `security` names the scopes it needs. " +
  "Requests are limited per token, and failed authentications per client address: once an address is over that limit, " +
  "its requests with a token that is not valid get 429 with `Retry-After` (not 401) until the window ends; valid tokens are still served.";

const STATUS_SUMMARY: Record<number, string> = {
  400: "Unexpected error",
  401: "Missing or invalid bearer token",
  403: "The token lacks the required scope",
  404: "No such plant",
  409: "A different plant is already stored under this id",
  413: "The body is larger than the configured limit",
  415: "The body is not application/json, or is sent with a Content-Encoding other than identity",
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

/**
 * Statuses whose only code is one every operation shares: answered by reference to one component,
 * `#/components/responses/<name>` (see `sharedResponses`).
 */
const SHARED_RESPONSES: Partial<Record<ErrorCodeName, string>> = {
  REQUEST_TIMEOUT: "RequestTimeout",
  URI_TOO_LONG: "UriTooLong",
  HEADERS_TOO_LARGE: "RequestHeaderFieldsTooLarge",
};

function errorResponses(codes: readonly ErrorCodeName[]): Json {
  const byStatus = new Map<number, ErrorCodeName[]>();
  for (const code of new Set(codes)) {
    const status = ErrorCodes[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const responses: Json = {};
  for (const [status, names] of [...byStatus].sort(([a], [b]) => a - b)) {
    const shared = names.length === 1 ? SHARED_RESPONSES[names[0]!] : undefined;
    if (shared !== undefined) {
      responses[String(status)] = { $ref: `#/components/responses/${shared}` };
      continue;
    }
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
 * Answers every operation shares because they come before its code runs (operation-docs.ts,
 * REQUEST_ERRORS): defined once here and referenced from each operation's responses.
 */
function sharedResponses(): Json {
  const response = (code: ErrorCodeName, description: string): Json => ({
    description,
    "x-error-codes": [{ error: ErrorCodes[code].error, name: code, meaning: ErrorCodes[code].meaning }],
    content: { "application/json": { schema: errorRef } },
  });
  return {
    RequestTimeout: response("REQUEST_TIMEOUT", "The request headers or body did not arrive in time"),
    UriTooLong: response("URI_TOO_LONG", "The request target (path and query) is longer than the server accepts"),
    RequestHeaderFieldsTooLarge: response(
      "HEADERS_TOO_LARGE",
      "The request headers are larger than the server accepts",
    ),
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
    ...(flat["examples"] === undefined ? {} : { examples: flat["examples"] }),
  };
}

type DocumentOptions = { bodyLimitBytes: number };

/**
 * The first of a zod schema's `examples` (its meta), as a Media Type or Parameter Object's
 * `example`. Tools that generate requests read that field rather than the JSON Schema `examples`
 * of the schema (openapi-to-postmanv2 reads a schema's only when it is inline, and `example` in a
 * Schema Object is deprecated in 3.1), so the document states both, from the one source.
 */
function firstExample(examples: unknown): { example: unknown } | Record<string, never> {
  return Array.isArray(examples) && examples.length > 0 ? { example: examples[0] } : {};
}

const zodExamples = (schema: unknown): unknown =>
  schema instanceof ZodType ? globalRegistry.get(schema)?.examples : undefined;

const SCHEMA_REF = "#/components/schemas/";

/** A zod schema as the document shows it: named schemas (meta `id`) by `$ref`, their bodies added to `pool`. */
function render(schema: ZodType, io: "input" | "output", pool: Map<string, Json>): Json {
  const rendered = createSchema(schema, { io });
  for (const [name, component] of Object.entries(rendered.components))
    if (!pool.has(name)) pool.set(name, component as Json);
  return rendered.schema as Json;
}

function schemaRefs(value: unknown, found: Set<string>): Set<string> {
  if (Array.isArray(value)) {
    for (const item of value) schemaRefs(item, found);
  } else if (typeof value === "object" && value !== null) {
    for (const [key, item] of Object.entries(value)) {
      if (key === "$ref" && typeof item === "string" && item.startsWith(SCHEMA_REF))
        found.add(item.slice(SCHEMA_REF.length));
      else schemaRefs(item, found);
    }
  }
  return found;
}

/**
 * The named schemas an operation refers to that are not among the interface's own components,
 * taken from `pool` (and what they refer to in turn), so every `$ref` in the document resolves.
 */
function referencedComponents(paths: unknown, known: Json, pool: Map<string, Json>): Record<string, Json> {
  const added: Record<string, Json> = {};
  let pending = [...schemaRefs(paths, new Set())];
  while (pending.length > 0) {
    const next = new Set<string>();
    for (const name of pending) {
      if (name in known || name in added) continue;
      const component = pool.get(name);
      if (component === undefined)
        throw new Error(`the document refers to ${SCHEMA_REF}${name}, which no schema defines`);
      added[name] = component;
      schemaRefs(component, next);
    }
    pending = [...next];
  }
  return added;
}

/**
 * Completes one operation trpc-to-openapi generated, from its procedure's `meta` (see
 * operation-docs.ts): parameter schemas, the body, the success answer and its headers, the
 * catalogued error responses and the scopes. Nothing here is specific to one operation.
 */
function completeOperation(
  operation: Json,
  meta: Meta,
  procedure: OpenApiProcedure,
  options: DocumentOptions,
  pool: Map<string, Json>,
): void {
  const { inputParser, outputParser } = getInputOutputParsers(procedure);

  const parameters = (operation["parameters"] ?? []) as Json[];
  if (parameters.length === 0) {
    delete operation["parameters"];
  } else {
    const schemas = meta.parameterSchemas ?? {};
    operation["parameters"] = parameters.map((parameter) => {
      const schema = (schemas[parameter["name"] as string] ?? parameter["schema"]) as Json;
      return { ...parameter, schema, ...firstExample(schema["examples"]) };
    });
  }

  const body = operation["requestBody"] as Json | undefined;
  if (body !== undefined) {
    const description = meta.requestBodyDescription?.({ bodyLimitBytes: options.bodyLimitBytes });
    // Without path parameters the body is the whole input, so a named input schema is shown by
    // `$ref` (the interface's NewPlant); otherwise trpc-to-openapi's body, which leaves them out.
    const schema = parameters.length === 0 ? render(inputParser, "input", pool) : undefined;
    const example = firstExample(zodExamples(inputParser));
    operation["requestBody"] = {
      required: body["required"],
      ...(description === undefined ? {} : { description }),
      content: schema === undefined ? body["content"] : { "application/json": { schema, ...example } },
    };
  }

  const generatedSuccess = (operation["responses"] as Record<string, Json>)["200"] ?? {};
  const description = (generatedSuccess["description"] as string | undefined) ?? "OK";
  const headers = meta.successHeaders === undefined ? {} : { headers: meta.successHeaders };
  // The adapter answers 204 when a procedure returns nothing.
  const success =
    outputParser !== undefined && instanceofZodTypeKind(outputParser, "void")
      ? { "204": { description, ...headers } }
      : {
          "200": {
            description,
            ...headers,
            content: {
              "application/json": {
                schema:
                  meta.documentedOutput === undefined
                    ? (generatedSuccess["content"] as Record<string, Json>)["application/json"]?.["schema"]
                    : render(meta.documentedOutput, "output", pool),
                ...firstExample(zodExamples(meta.documentedOutput ?? outputParser)),
              },
            },
          },
        };
  operation["responses"] = { ...success, ...errorResponses(meta.errors) };

  // OpenAPI 3.1 lets a non-OAuth requirement list "role names": here, the scopes needed.
  operation["security"] = meta.openapi?.protect === false ? [] : [{ bearerAuth: [...(meta.scopes ?? [])] }];
}

/**
 * The served OpenAPI 3.1.0 document. Paths and operations come from the tRPC router through
 * trpc-to-openapi and are completed from each procedure's `meta`; component schemas come from the
 * shared zod schemas through zod-openapi; and the parts trpc-to-openapi cannot express (a
 * `$ref`'d request body, our `Error` responses, `NewPlant` as `allOf`) are set here. Built once
 * at start-up.
 */
export function buildOpenApiDocument(router: AppRouter, options: DocumentOptions): OpenAPIObject {
  const generated = generateOpenApiDocument(router, {
    title: "OpenAPI Plant Store",
    version: "1.0.0",
    license: { name: "MIT" },
    openApiVersion: "3.1.0",
    baseUrl: "/",
    securitySchemes: { bearerAuth: { type: "http", scheme: "bearer" } },
  }) as unknown as Json;

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
  // Named schemas the operations may refer to: trpc-to-openapi's, and those rendered from meta.
  const pool = new Map(
    Object.entries(((generated["components"] as Json | undefined)?.["schemas"] ?? {}) as Record<string, Json>),
  );
  forEachOpenApiProcedure<Meta>(router._def.procedures, ({ procedure, meta }) => {
    const operation = paths[normalizePath(meta.openapi.path)]?.[meta.openapi.method.toLowerCase()];
    if (operation === undefined)
      throw new Error(`trpc-to-openapi generated no ${meta.openapi.method} ${meta.openapi.path}`);
    completeOperation(operation, meta, procedure, options, pool);
  });
  const extraSchemas = referencedComponents(paths, schemas, pool);

  return {
    openapi: "3.1.0",
    info: {
      title: "OpenAPI Plant Store",
      license: { name: "MIT", identifier: "MIT" },
      version: "1.0.0",
      description:
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
        "`HEAD` wherever `GET` is. Every operation may also answer 408, 414 or 431 (shared under `components.responses`) " +
        "and 400 for a request that is not valid HTTP.",
    },
    servers: [
      {
        url: "/",
        description:
          "The server that serves this document: a relative URL, so it stays right behind a proxy that changes the host or scheme.",
      },
    ],
    tags: [
      { name: "plants", description: "The plants in the store: create, list and delete." },
      { name: "credentials", description: "The bearer token a request is made with." },
    ],
    security: [{ bearerAuth: [] }],
    paths,
    webhooks: {
      "/plant/webhook": {
        post: {
          operationId: "newPlant",
          summary: "A plant was added",
          description:
            "Announces a plant added to the store (never an idempotent replay), POSTed to every active subscriber " +
            "(`plantstore-server webhooks add`). Signed per Standard Webhooks: verify `webhook-signature` " +
            "(`v1,<base64 HMAC-SHA256>` of `<webhook-id>.<webhook-timestamp>.<body>` with the `whsec_` secret). " +
            "Delivery is at least once: the same `webhook-id` on every retry, retries with exponential backoff over " +
            "about three days, `Retry-After` honoured, `410 Gone` unsubscribes.",
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
      schemas: {
        ...schemas,
        Plant: plant,
        NewPlant: newPlantAsAllOf(schemas["NewPlant"] as Json, plant),
        Error: error,
        ...extraSchemas,
      },
      responses: sharedResponses(),
      securitySchemes: { bearerAuth: { type: "http", scheme: "bearer", description: BEARER_DESCRIPTION } },
    },
  } as unknown as OpenAPIObject;
}
