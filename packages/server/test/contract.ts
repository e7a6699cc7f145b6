import { existsSync, readFileSync } from "node:fs";
import { Ajv2020 } from "ajv/dist/2020.js";
import type { ValidateFunction } from "ajv";

/**
 * Validates responses against an OpenAPI 3.1 document with a JSON Schema 2020-12 validator.
 * Used for both the seed interface and the served `/openapi.json`, on every response the
 * HTTP tests receive.
 */
export type OpenApiDoc = {
  paths: Record<string, Record<string, { responses: Record<string, { content?: Record<string, { schema: unknown }> }> }>>;
  components: { schemas: Record<string, unknown> };
};

/** The interface as shipped beside the repository (`../shared/seed`), and our committed copy of it. */
export const sharedSeedUrl = new URL("../../../../shared/seed/openapi.json", import.meta.url);
export const vendoredSeedUrl = new URL("../../../spec/seed-openapi.json", import.meta.url);

// The shared copy is the source of truth when it is there; a clone on its own uses the vendored
// copy, which a test keeps identical to the shared one.
export const seedDocument = JSON.parse(
  readFileSync(existsSync(sharedSeedUrl) ? sharedSeedUrl : vendoredSeedUrl, "utf8"),
) as OpenApiDoc;

export class ResponseContract {
  readonly #doc: OpenApiDoc;
  readonly #ajv: Ajv2020;
  readonly #cache = new Map<string, ValidateFunction>();
  readonly #name: string;
  /** Statuses every operation may answer besides those the document lists (the seed shows only 200 and 400). */
  readonly #errorFallback: boolean;

  constructor(name: string, doc: OpenApiDoc, options: { errorFallback: boolean }) {
    this.#name = name;
    this.#doc = doc;
    this.#errorFallback = options.errorFallback;
    this.#ajv = new Ajv2020({ strict: false, allErrors: true });
    this.#ajv.addFormat("int32", {
      type: "number",
      validate: (n: number) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31,
    });
    this.#ajv.addFormat("int64", { type: "number", validate: (n: number) => Number.isInteger(n) });
    // RFC 3339 timestamps (the zod-generated schema also carries an exact pattern).
    this.#ajv.addFormat("date-time", { type: "string", validate: (s: string) => /^\d{4}-\d\d-\d\dT/.test(s) && !Number.isNaN(Date.parse(s)) });
    this.#ajv.addSchema({ $id: "doc", components: doc.components }, "doc");
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

  /** Throws with a readable reason when the response does not satisfy the document. */
  check(method: string, path: string, status: number, contentType: string | null, bodyText: string): void {
    const operation = this.#doc.paths[path]?.[method.toLowerCase()];
    // The seed shows only POST /plants: for operations it does not show, only the Error rule applies.
    if (operation === undefined && this.#errorFallback && status < 400) return;
    const declared = operation?.responses[String(status)];
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
    if (!contentType?.startsWith("application/json")) {
      throw new Error(`${this.#name}: ${method} ${path} ${status} has Content-Type ${contentType}, not application/json`);
    }
    const body: unknown = JSON.parse(bodyText);
    const validate = this.#validator(schema);
    if (!validate(body)) {
      throw new Error(
        `${this.#name}: ${method} ${path} ${status} body ${bodyText} fails ${JSON.stringify(schema)}: ${this.#ajv.errorsText(validate.errors)}`,
      );
    }
  }
}
