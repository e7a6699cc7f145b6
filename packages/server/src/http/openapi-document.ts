import { ErrorBody, type ErrorCodeName, ErrorCodes, NewPlant, Plant } from "@plantstore/schema";
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

import type { HeaderDoc } from "../operation-docs.ts";
import { PACKAGE_VERSION } from "../package-version.ts";
import type { AppRouter } from "../router/root.ts";
import {
  BEARER_DESCRIPTION,
  ERROR_CODE_PROPERTY,
  ERROR_STATUS_HEADERS,
  ERROR_STATUS_SUMMARIES,
  headOperation,
  SERVERS,
  SERVICE_DESCRIPTION,
  SERVICE_LICENSE,
  SERVICE_TITLE,
  SHARED_ERROR_RESPONSES,
  TAGS,
  WEBHOOKS,
} from "../service-docs.ts";
import type { Meta } from "../trpc.ts";
import { PLANT_EVENTS_OPERATION } from "./plant-events-doc.ts";

type Json = Record<string, unknown>;

const errorRef = { $ref: "#/components/schemas/Error" };

/** An operation's error responses: its catalogued codes grouped by status, described per status (service-docs.ts). */
function errorResponses(
  codes: readonly ErrorCodeName[],
  operationHeaders: Readonly<Record<number, Readonly<Record<string, HeaderDoc>>>> = {},
): Json {
  const byStatus = new Map<number, ErrorCodeName[]>();
  for (const code of new Set(codes)) {
    const status = ErrorCodes[code].status;
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const responses: Json = {};
  for (const [status, names] of [...byStatus].sort(([a], [b]) => a - b)) {
    const shared = names.length === 1 ? SHARED_ERROR_RESPONSES[names[0]!] : undefined;
    if (shared !== undefined) {
      responses[String(status)] = { $ref: `#/components/responses/${shared.name}` };
      continue;
    }
    const response: Json = {
      description: ERROR_STATUS_SUMMARIES[status] ?? "Error",
      "x-error-codes": names.map((n) => ({ error: ErrorCodes[n].error, name: n, meaning: ErrorCodes[n].meaning })),
      content: { "application/json": { schema: errorRef } },
    };
    const headers = operationHeaders[status] ?? ERROR_STATUS_HEADERS[status];
    if (headers !== undefined) response["headers"] = headers;
    responses[String(status)] = response;
  }
  return responses;
}

/** The components of SHARED_ERROR_RESPONSES, referenced from each operation's responses. */
function sharedResponses(): Json {
  const responses: Json = {};
  for (const [code, { name, description }] of Object.entries(SHARED_ERROR_RESPONSES) as Array<
    [ErrorCodeName, { name: string; description: string }]
  >) {
    responses[name] = {
      description,
      "x-error-codes": [{ error: ErrorCodes[code].error, name: code, meaning: ErrorCodes[code].meaning }],
      content: { "application/json": { schema: errorRef } },
    };
  }
  return responses;
}

/** zod-openapi renders `NewPlant` flat; the interface spells it as `allOf` Plant plus `id`. */
function newPlantAsAllOf(flat: Json, plant: Json): Json {
  const properties = (flat["properties"] ?? {}) as Json;
  const plantProperties = new Set(Object.keys(plant["properties"] ?? {}));
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
  const headerParameters = (meta.headerParameters ?? []).map((parameter) => ({
    ...parameter,
    in: "header",
    ...firstExample((parameter["schema"] as Json | undefined)?.["examples"]),
  }));
  if (parameters.length + headerParameters.length === 0) {
    delete operation["parameters"];
  } else {
    const schemas = meta.parameterSchemas ?? {};
    operation["parameters"] = [
      ...parameters.map((parameter) => {
        const schema = (schemas[parameter["name"] as string] ?? parameter["schema"]) as Json;
        return { ...parameter, schema, ...firstExample(schema["examples"]) };
      }),
      ...headerParameters,
    ];
  }

  const body = operation["requestBody"] as Json | undefined;
  if (body !== undefined) {
    const description = meta.requestBodyDescription?.({ bodyLimitBytes: options.bodyLimitBytes });
    // Without path parameters the body is the whole input, so a named input schema is shown by
    // `$ref` (the interface's NewPlant); with them, the named body schema of the meta, else
    // trpc-to-openapi's body, which leaves the parameters out.
    const named = parameters.length === 0 ? inputParser : meta.documentedBody;
    const schema = named === undefined ? undefined : render(named, "input", pool);
    const example = firstExample(zodExamples(named));
    const mediaType = meta.requestMediaType ?? "application/json";
    const generated = (body["content"] as Record<string, Json>)["application/json"];
    operation["requestBody"] = {
      required: body["required"],
      ...(description === undefined ? {} : { description }),
      content: { [mediaType]: schema === undefined ? generated : { schema, ...example } },
    };
  }

  const generatedSuccess = (operation["responses"] as Record<string, Json>)["200"] ?? {};
  const description = (generatedSuccess["description"] as string | undefined) ?? "OK";
  const headers = meta.successHeaders === undefined ? {} : { headers: meta.successHeaders };
  // The adapter answers 204 when a procedure returns nothing.
  const content = {
    "application/json": {
      schema:
        meta.documentedOutput === undefined
          ? (generatedSuccess["content"] as Record<string, Json>)["application/json"]?.["schema"]
          : render(meta.documentedOutput, "output", pool),
      ...firstExample(zodExamples(meta.documentedOutput ?? outputParser)),
    },
  };
  // The adapter answers 204 when a procedure returns nothing.
  const success =
    outputParser !== undefined && instanceofZodTypeKind(outputParser, "void")
      ? { "204": { description, ...headers } }
      : { "200": { description, ...headers, content } };
  // A 201 carries the same body as the 200; a 304 none (RFC 9110 §15.4.5).
  const others: Json = {};
  for (const [status, other] of Object.entries(meta.otherSuccesses ?? {}))
    others[status] = status === "304" ? other : { ...other, content };
  operation["responses"] = { ...success, ...others, ...errorResponses(meta.errors, meta.errorHeaders) };

  // OpenAPI 3.1 lets a non-OAuth requirement list "role names": here, the scopes needed.
  operation["security"] = meta.openapi?.protect === false ? [] : [{ bearerAuth: [...(meta.scopes ?? [])] }];
}

/** `GET /plants/events`, which no procedure can be (plant-events-doc.ts), listed after `/plants`. */
function addPlantEvents(paths: Record<string, Record<string, Json>>, pool: Map<string, Json>): void {
  const { path, errors, eventSchema, operation } = PLANT_EVENTS_OPERATION;
  const get = operation(render(eventSchema, "output", pool));
  get["responses"] = { ...(get["responses"] as Json), ...errorResponses(errors) };
  const entries = Object.entries(paths);
  const at = entries.findIndex(([template]) => template === "/plants") + 1;
  entries.splice(at, 0, [path, { get }]);
  for (const template of Object.keys(paths)) delete paths[template];
  Object.assign(paths, Object.fromEntries(entries));
}

/**
 * A `HEAD` operation after every `GET`, as the app answers one (routes.ts): the GET's parameters,
 * security and responses, each without `content`. The shared request-level answers (408, 414, 431)
 * stay as referenced, since they are written before the request's method is known.
 */
function addHeadOperations(paths: Record<string, Record<string, Json>>): void {
  for (const [template, item] of Object.entries(paths)) {
    const get = item["get"];
    if (get === undefined) continue;
    const responses = Object.fromEntries(
      Object.entries(get["responses"] as Record<string, Json>).map(([status, response]) => {
        if (response["$ref"] !== undefined) return [status, response];
        const { content: _content, ...bodiless } = response;
        return [status, bodiless];
      }),
    );
    const head = {
      ...get,
      ...headOperation({
        path: template,
        operationId: get["operationId"] as string,
        summary: get["summary"] as string,
      }),
      responses,
    };
    paths[template] = Object.fromEntries(
      Object.entries(item).flatMap(([method, operation]) =>
        method === "get"
          ? [
              [method, operation],
              ["head", head],
            ]
          : [[method, operation]],
      ),
    );
  }
}

/**
 * The served OpenAPI 3.1.0 document. Paths and operations come from the tRPC router through
 * trpc-to-openapi and are completed from each procedure's `meta`; component schemas come from the
 * shared zod schemas through zod-openapi; and the parts trpc-to-openapi cannot express (a
 * `$ref`'d request body, our `Error` responses, `NewPlant` as `allOf`) are set here. What the
 * document says about the service as a whole comes from service-docs.ts, its version from the
 * package's. Built once at start-up.
 */
export function buildOpenApiDocument(router: AppRouter, options: DocumentOptions): OpenAPIObject {
  const generated = generateOpenApiDocument(router, {
    title: SERVICE_TITLE,
    version: PACKAGE_VERSION,
    license: SERVICE_LICENSE,
    openApiVersion: "3.1.0",
    baseUrl: "/",
    securitySchemes: { bearerAuth: { type: "http", scheme: "bearer" } },
  }) as unknown as Json;

  const components = createDocument({
    openapi: "3.1.0",
    info: { title: "components", version: PACKAGE_VERSION },
    components: { schemas: { Plant, NewPlant, Error: ErrorBody } },
  }).components as Json;
  const schemas = { ...(components["schemas"] as Record<string, Json>) };
  const plant = { ...(schemas["Plant"] as Json) };
  // Plant is also the base of NewPlant's allOf, so it cannot forbid the extra `id` property.
  delete plant["additionalProperties"];
  const error = { ...(schemas["Error"] as Json) };
  delete error["additionalProperties"];
  const errorProperties = { ...(error["properties"] as Record<string, Json>) };
  errorProperties["error"] = ERROR_CODE_PROPERTY;
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
  addPlantEvents(paths, pool);
  addHeadOperations(paths);
  const extraSchemas = referencedComponents(paths, schemas, pool);

  return {
    openapi: "3.1.0",
    info: {
      title: SERVICE_TITLE,
      license: SERVICE_LICENSE,
      version: PACKAGE_VERSION,
      description: SERVICE_DESCRIPTION,
    },
    servers: SERVERS,
    tags: TAGS,
    security: [{ bearerAuth: [] }],
    paths,
    webhooks: WEBHOOKS,
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
