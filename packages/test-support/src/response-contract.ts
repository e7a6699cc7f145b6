import type { ValidateFunction } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";

import { seedDocument } from "./seed-document.ts";

/**
 * Validates responses against an OpenAPI 3.1 document with a JSON Schema 2020-12 validator.
 * Used for both the seed interface and the served `/openapi.json`, on every response the
 * HTTP tests receive: the server's request helpers (packages/server/test/support/harness.ts, load.ts,
 * raw-socket.ts), `checkedFetch` (client and e2e tests) and the CLI tests' proxy
 * (apps/cli/test/run-cli.ts).
 */
type ResponseDoc = { $ref?: string; content?: Record<string, { schema: unknown }> };

export type OpenApiDoc = {
  paths: Record<string, Record<string, { responses: Record<string, ResponseDoc> }>>;
  components: { schemas: Record<string, unknown>; responses?: Record<string, ResponseDoc> };
};

const RESPONSE_REF = "#/components/responses/";

type Compiled = { ajv: Ajv2020; validators: Map<string, ValidateFunction> };

/**
 * Validators by document text, shared by every contract on the same document: servers started
 * with the same settings serve the same document, and compiling its schemas with Ajv took tens
 * of milliseconds per server otherwise, for hundreds of test servers.
 */
const compiledByDocument = new Map<string, Compiled>();

function compiledFor(doc: OpenApiDoc): Compiled {
  const text = JSON.stringify(doc);
  let compiled = compiledByDocument.get(text);
  if (compiled === undefined) {
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    ajv.addFormat("int32", {
      type: "number",
      validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31,
    });
    ajv.addFormat("int64", { type: "number", validate: (n: number) => Number.isInteger(n) });
    // RFC 3339 timestamps (the zod-generated schema also carries an exact pattern).
    ajv.addFormat("date-time", {
      type: "string",
      validate: (s: string) => /^\d{4}-\d\d-\d\dT/.test(s) && !Number.isNaN(Date.parse(s)),
    });
    ajv.addSchema({ $id: "doc", components: doc.components }, "doc");
    compiledByDocument.set(text, (compiled = { ajv, validators: new Map() }));
  }
  return compiled;
}

export class ResponseContract {
  readonly #doc: OpenApiDoc;
  readonly #ajv: Ajv2020;
  readonly #cache: Map<string, ValidateFunction>;
  readonly #name: string;
  /** Statuses every operation may answer besides those the document lists (the seed shows only 200 and 400). */
  readonly #errorFallback: boolean;

  constructor(name: string, doc: OpenApiDoc, options: { errorFallback: boolean }) {
    this.#name = name;
    this.#doc = doc;
    this.#errorFallback = options.errorFallback;
    const compiled = compiledFor(doc);
    this.#ajv = compiled.ajv;
    this.#cache = compiled.validators;
  }

  /** Compiles a `$ref` into the document's components, or an inline schema whose refs point there. */
  #validator(schema: unknown): ValidateFunction {
    const key = JSON.stringify(schema);
    let fn = this.#cache.get(key);
    if (fn === undefined) {
      fn = this.#ajv.compile(JSON.parse(key.replaceAll('"$ref":"#/', '"$ref":"doc#/')) as object);
      this.#cache.set(key, fn);
    }
    return fn;
  }

  /** The operation at a literal path (`/plants/7`) or its template (`/plants/{id}`), matched exactly as the server does. */
  #operation(method: string, path: string) {
    const m = method.toLowerCase();
    const exact = this.#doc.paths[path];
    if (exact !== undefined) return exact[m];
    for (const [template, operations] of Object.entries(this.#doc.paths)) {
      if (!template.includes("{")) continue;
      const pattern = template
        .split(/\{[^}]+\}/)
        .map((part) => part.replace(/[.*+?^$()|[\]\\]/g, "\\$&"))
        .join("[^/]+");
      if (new RegExp(`^${pattern}$`).test(path)) return operations[m];
    }
    return undefined;
  }

  /** A response as declared, or the shared one under `components.responses` it refers to. */
  #response(declared: ResponseDoc | undefined): ResponseDoc | undefined {
    const ref = declared?.$ref;
    if (ref === undefined) return declared;
    const shared = ref.startsWith(RESPONSE_REF)
      ? this.#doc.components.responses?.[ref.slice(RESPONSE_REF.length)]
      : undefined;
    if (shared === undefined) throw new Error(`${this.#name}: the response ${ref} is not in the document`);
    return shared;
  }

  /** Throws with a readable reason when the response does not satisfy the document. */
  check(method: string, path: string, status: number, contentType: string | null, bodyText: string): void {
    const operation = this.#operation(method, path);
    // The seed shows only POST /plants: for operations it does not show, only the Error rule applies.
    if (operation === undefined && this.#errorFallback && status < 400) return;
    const declared = this.#response(operation?.responses[String(status)]);
    // An answer to HEAD has no body (RFC 9110 §9.3.2): only its status is checked.
    if (method === "HEAD") {
      if (declared === undefined && !(status >= 400 && (this.#errorFallback || operation === undefined))) {
        throw new Error(`${this.#name}: HEAD ${path} answered ${status}, which the document does not declare`);
      }
      return;
    }
    let schema: unknown;
    if (declared !== undefined) {
      schema = declared.content?.["application/json"]?.schema;
      if (schema === undefined && bodyText.length > 0) {
        throw new Error(`${this.#name}: ${method} ${path} ${status} declares no body but sent ${bodyText}`);
      }
    } else if (status >= 400 && (this.#errorFallback || operation === undefined)) {
      schema = { $ref: "#/components/schemas/Error" };
    } else {
      throw new Error(`${this.#name}: ${method} ${path} answered ${status}, which the document does not declare`);
    }
    if (schema === undefined) return;
    this.#checkBody(`${method} ${path} ${status}`, schema, contentType, bodyText);
  }

  /**
   * The rule every non-2xx answer follows whatever the request (`info.description`), for answers
   * whose request is unknown: raw-socket answers Node writes before the app sees a request.
   */
  checkError(status: number, contentType: string | null, bodyText: string): void {
    if (status < 400) throw new Error(`${this.#name}: checkError is for 4xx and 5xx answers, not ${status}`);
    this.#checkBody(`${status}`, { $ref: "#/components/schemas/Error" }, contentType, bodyText);
  }

  #checkBody(what: string, schema: unknown, contentType: string | null, bodyText: string): void {
    if (!contentType?.startsWith("application/json")) {
      throw new Error(`${this.#name}: ${what} has Content-Type ${contentType}, not application/json`);
    }
    let body: unknown;
    try {
      body = JSON.parse(bodyText);
    } catch {
      throw new Error(`${this.#name}: ${what} body is not JSON: ${bodyText}`);
    }
    const validate = this.#validator(schema);
    if (!validate(body)) {
      throw new Error(
        `${this.#name}: ${what} body ${bodyText} fails ${JSON.stringify(schema)}: ${this.#ajv.errorsText(validate.errors)}`,
      );
    }
  }
}

/**
 * Paths the server answers outside the interface: the document itself, health probes, Prometheus
 * text and the docs page with its assets. Their successful answers are not API responses, so
 * neither document describes them; their errors still follow the Error rule, which the served
 * document states for every path.
 */
export const NON_API_PATHS: ReadonlySet<string> = new Set([
  "/openapi.json",
  "/healthz",
  "/readyz",
  "/metrics",
  "/docs",
  "/docs/swagger-ui.css",
  "/docs/swagger-ui-bundle.js",
  "/docs/init.js",
]);

/** The built web console's files, served at /app when PLANTSTORE_WEB_DIR is set: no API answers either. */
const WEB_APP_PATH = /^\/app(\/|$)/;

/** One answer as a test received it; `path` may carry a query, which the documents do not key on. */
export type Answer = { method: string; path: string; status: number; contentType: string | null; body: string };

/** Checks one answer against every contract, except what no document describes (see each rule). */
export function checkAnswer(contracts: readonly ResponseContract[], answer: Answer): void {
  const method = answer.method.toUpperCase();
  const path = answer.path.split("?")[0] ?? answer.path;
  // A CORS preflight (OPTIONS, 204) is part of the fetch protocol, not an operation.
  if (method === "OPTIONS" && answer.status === 204) return;
  if ((NON_API_PATHS.has(path) || WEB_APP_PATH.test(path)) && answer.status < 400) return;
  for (const contract of contracts) contract.check(method, path, answer.status, answer.contentType, answer.body);
}

/**
 * The seed and the document the server at `baseUrl` serves, fetched from it. For the client and
 * CLI tests, which count no requests, so one more GET /openapi.json per server changes nothing.
 */
export async function fetchContracts(baseUrl: string): Promise<ResponseContract[]> {
  // `Connection: close`: a connection left idle in fetch's pool would hold the server's stop for
  // its idle grace (1 s) when the test closes it.
  const response = await globalThis.fetch(new URL("/openapi.json", baseUrl), { headers: { connection: "close" } });
  if (response.status !== 200) throw new Error(`GET ${baseUrl}/openapi.json answered ${response.status}`);
  const served = (await response.json()) as OpenApiDoc;
  return [
    new ResponseContract("seed openapi.json", seedDocument, { errorFallback: true }),
    new ResponseContract(`served ${baseUrl}/openapi.json`, served, { errorFallback: false }),
  ];
}
