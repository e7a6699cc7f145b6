/**
 * Finds the changes between two OpenAPI 3.1 documents that would break someone who relies on the
 * older one. Written here because no library on npm fit: openapi-diff refuses 3.1 documents, and
 * api-smart-diff (3.0-only by its own word) called a response field turning from integer to string,
 * and a removed response field, non-breaking. This one is small and knows the direction of data:
 *
 * - what callers send (request bodies, parameters) may accept more, never less: a removed type,
 *   value or field, a tighter bound or a newly required field breaks them;
 * - what callers receive (responses, their headers) may promise more, never less: a removed field,
 *   status, header or guarantee, or a wider type or new enum value breaks them;
 * - for `webhooks` the roles swap: we send the request, the subscriber sends the response;
 * - a schema that becomes a choice (`anyOf`/`oneOf`), or stops being one, is judged by its
 *   alternatives: what callers send must still fit one of them, what they receive fit every one.
 *
 * Removed paths, operations and webhooks break too, and so does authentication newly required.
 * Additions elsewhere (operations, optional fields, optional parameters, responses) do not.
 */

type Json = Record<string, unknown>;
/** `in`: data flows to the service, so narrowing breaks; `out`: data flows from it, so widening breaks. */
type Flow = "in" | "out";

export type BreakingChange = { where: string; change: string };

const METHODS = ["get", "put", "post", "delete", "options", "head", "patch", "trace"] as const;
const LOWER_BOUNDS = ["minimum", "exclusiveMinimum", "minLength", "minItems", "minProperties"] as const;
const UPPER_BOUNDS = ["maximum", "exclusiveMaximum", "maxLength", "maxItems", "maxProperties"] as const;
/** Formats that accept everything the second one does. */
const WIDER_FORMAT: Record<string, string[]> = {
  int64: ["int32"],
  double: ["float"],
  number: ["int32", "int64", "float", "double"],
};

const asObject = (value: unknown): Json | undefined =>
  value !== null && typeof value === "object" && !Array.isArray(value) ? (value as Json) : undefined;
const asArray = (value: unknown): unknown[] => (Array.isArray(value) ? value : []);
const show = (value: unknown): string => JSON.stringify(value);

class Comparison {
  readonly changes: BreakingChange[] = [];
  readonly #ancestors = new Set<string>();
  readonly before: Json;
  readonly after: Json;

  constructor(before: Json, after: Json) {
    this.before = before;
    this.after = after;
  }

  report(where: string, change: string): void {
    this.changes.push({ where, change });
  }

  /** Follows `$ref`s within the same document. */
  resolve(doc: Json, value: unknown): Json | undefined {
    let current = asObject(value);
    for (let hops = 0; current !== undefined && typeof current["$ref"] === "string" && hops < 32; hops++) {
      const ref = current["$ref"];
      if (!ref.startsWith("#/")) return current;
      current = asObject(
        ref
          .slice(2)
          .split("/")
          .map((part) => part.replaceAll("~1", "/").replaceAll("~0", "~"))
          .reduce<unknown>((node, key) => asObject(node)?.[key], doc),
      );
    }
    return current;
  }

  /** A schema with `$ref`s resolved and `allOf` folded into one object schema. */
  flatten(doc: Json, value: unknown, depth = 0): Json | undefined {
    const schema = this.resolve(doc, value);
    if (schema === undefined || depth > 16 || !Array.isArray(schema["allOf"])) return schema;
    const merged: Json = { ...schema };
    delete merged["allOf"];
    const properties: Json = { ...asObject(schema["properties"]) };
    const required = new Set(asArray(schema["required"]).map(String));
    for (const part of schema["allOf"]) {
      const flat = this.flatten(doc, part, depth + 1) ?? {};
      for (const [key, item] of Object.entries(flat)) {
        if (key === "properties") Object.assign(properties, asObject(item));
        else if (key === "required") for (const name of asArray(item)) required.add(String(name));
        else if (!(key in merged)) merged[key] = item;
      }
    }
    if (Object.keys(properties).length > 0) merged["properties"] = properties;
    if (required.size > 0) merged["required"] = [...required];
    return merged;
  }

  schema(where: string, beforeValue: unknown, afterValue: unknown, flow: Flow): void {
    const before = this.flatten(this.before, beforeValue);
    const after = this.flatten(this.after, afterValue);
    if (before === undefined && after === undefined) return;
    // A recursive schema is compared once along each path; shared ones are reported at every use.
    const key = `${flow}|${show(before)}|${show(after)}`;
    if (this.#ancestors.has(key)) return;
    this.#ancestors.add(key);
    try {
      this.compareSchemas(where, before ?? {}, after ?? {}, flow);
    } finally {
      this.#ancestors.delete(key);
    }
  }

  compareSchemas(where: string, b: Json, a: Json, flow: Flow): void {
    if (this.gainedOrLostAlternatives(where, b, a, flow)) return;
    this.types(where, b, a, flow);
    this.formats(where, b, a, flow);
    this.values(where, b, a, flow);
    this.bounds(where, b, a, flow);
    if (b["pattern"] !== a["pattern"]) {
      if (flow === "in" && a["pattern"] !== undefined) this.report(where, `pattern changed to ${show(a["pattern"])}`);
      if (flow === "out" && b["pattern"] !== undefined)
        this.report(where, `pattern ${show(b["pattern"])} no longer guaranteed`);
    }
    this.properties(where, b, a, flow);
    if (b["items"] !== undefined || a["items"] !== undefined) this.schema(`${where}[]`, b["items"], a["items"], flow);
    for (const keyword of ["oneOf", "anyOf"] as const) this.alternatives(where, keyword, b, a, flow);
  }

  /** The changes comparing `b` with `a` would report, without reporting them. */
  trial(where: string, b: Json, a: Json, flow: Flow): BreakingChange[] {
    const mark = this.changes.length;
    this.compareSchemas(where, b, a, flow);
    return this.changes.splice(mark);
  }

  /**
   * A schema that became a choice (`anyOf`/`oneOf`) where it was one schema, or the reverse: a
   * parameter once an int64 that now also takes a string, say. Each alternative is compared as the
   * whole schema with that alternative folded in. What callers send breaks unless some alternative
   * still accepts everything the one schema did (or the one schema accepts every former
   * alternative); what they receive breaks unless every alternative stays within what was promised
   * (or the one schema is within some former alternative). Returns false when neither side is such
   * a choice, or both are (then `alternatives` compares them pairwise).
   */
  gainedOrLostAlternatives(where: string, b: Json, a: Json, flow: Flow): boolean {
    const keywordOf = (s: Json) => (["anyOf", "oneOf"] as const).find((k) => asArray(s[k]).length > 0);
    const bk = keywordOf(b);
    const ak = keywordOf(a);
    if ((bk === undefined) === (ak === undefined)) return false;
    const [choice, doc, keyword] = ak !== undefined ? [a, this.after, ak] : [b, this.before, bk!];
    const shared: Json = { ...choice };
    delete shared[keyword];
    delete shared["description"];
    const options = asArray(choice[keyword]).map((alternative) => ({ ...shared, ...this.flatten(doc, alternative) }));
    const trials = options.map((option) =>
      choice === a ? this.trial(where, b, option, flow) : this.trial(where, option, a, flow),
    );
    // Gained, `in` / lost, `out`: one alternative that fits is enough. Otherwise every one must.
    const oneSuffices = (choice === a) === (flow === "in");
    if (oneSuffices) {
      if (trials.every((changes) => changes.length > 0)) {
        const why = trials.flat().map((c) => c.change);
        this.report(
          where,
          `no ${keyword} alternative ${flow === "in" ? "accepts what was accepted" : "holds what was promised"} before (${why.join("; ")})`,
        );
      }
    } else {
      for (const change of trials.flat()) this.report(change.where, change.change);
    }
    return true;
  }

  types(where: string, b: Json, a: Json, flow: Flow): void {
    const typesOf = (s: Json): Set<string> | undefined => {
      if (s["type"] === undefined) return undefined;
      const type = s["type"] as string | string[];
      const types = new Set(Array.isArray(type) ? type : [type]);
      if (s["nullable"] === true) types.add("null");
      return types;
    };
    const accepts = (types: Set<string> | undefined, type: string) =>
      types === undefined || types.has(type) || (type === "integer" && types.has("number"));
    const bt = typesOf(b);
    const at = typesOf(a);
    if (flow === "in") {
      if (bt === undefined && at !== undefined) this.report(where, `now only accepts type ${[...at].join(" | ")}`);
      for (const type of bt ?? []) if (!accepts(at, type)) this.report(where, `no longer accepts type ${type}`);
    } else {
      if (at === undefined && bt !== undefined) this.report(where, `no longer guaranteed to be ${[...bt].join(" | ")}`);
      for (const type of at ?? []) if (!accepts(bt, type)) this.report(where, `may now be of type ${type}`);
    }
  }

  formats(where: string, b: Json, a: Json, flow: Flow): void {
    const bf = b["format"] as string | undefined;
    const af = a["format"] as string | undefined;
    if (bf === af) return;
    const wider = (x: string | undefined, y: string | undefined) =>
      x === undefined || x === y || (y !== undefined && (WIDER_FORMAT[x] ?? []).includes(y));
    if (flow === "in" && !wider(af, bf)) this.report(where, `format narrowed from ${bf ?? "none"} to ${af ?? "none"}`);
    if (flow === "out" && !wider(bf, af)) this.report(where, `format widened from ${bf ?? "none"} to ${af ?? "none"}`);
  }

  values(where: string, b: Json, a: Json, flow: Flow): void {
    const valuesOf = (s: Json): string[] | undefined =>
      Array.isArray(s["enum"]) ? s["enum"].map(show) : "const" in s ? [show(s["const"])] : undefined;
    const bv = valuesOf(b);
    const av = valuesOf(a);
    if (flow === "in" && av !== undefined) {
      if (bv === undefined) this.report(where, `now only accepts ${av.join(", ")}`);
      else for (const value of bv) if (!av.includes(value)) this.report(where, `no longer accepts the value ${value}`);
    }
    if (flow === "out" && bv !== undefined) {
      if (av === undefined) this.report(where, `no longer limited to ${bv.join(", ")}`);
      else for (const value of av) if (!bv.includes(value)) this.report(where, `may now be the new value ${value}`);
    }
  }

  bounds(where: string, b: Json, a: Json, flow: Flow): void {
    const num = (s: Json, key: string) => (typeof s[key] === "number" ? s[key] : undefined);
    for (const key of LOWER_BOUNDS) {
      const bv = num(b, key);
      const av = num(a, key);
      if (flow === "in" && av !== undefined && (bv === undefined || av > bv))
        this.report(where, `${key} raised from ${bv ?? "none"} to ${av}`);
      if (flow === "out" && bv !== undefined && (av === undefined || av < bv))
        this.report(where, `${key} lowered from ${bv} to ${av ?? "none"}`);
    }
    for (const key of UPPER_BOUNDS) {
      const bv = num(b, key);
      const av = num(a, key);
      if (flow === "in" && av !== undefined && (bv === undefined || av < bv))
        this.report(where, `${key} lowered from ${bv ?? "none"} to ${av}`);
      if (flow === "out" && bv !== undefined && (av === undefined || av > bv))
        this.report(where, `${key} raised from ${bv} to ${av ?? "none"}`);
    }
  }

  properties(where: string, b: Json, a: Json, flow: Flow): void {
    const bp = asObject(b["properties"]) ?? {};
    const ap = asObject(a["properties"]) ?? {};
    const br = new Set(asArray(b["required"]).map(String));
    const ar = new Set(asArray(a["required"]).map(String));
    for (const [name, schema] of Object.entries(bp)) {
      if (!(name in ap)) this.report(`${where}.${name}`, "field removed");
      else this.schema(`${where}.${name}`, schema, ap[name], flow);
    }
    if (flow === "in") {
      for (const name of ar)
        if (!br.has(name)) this.report(`${where}.${name}`, name in bp ? "field now required" : "new required field");
      if (b["additionalProperties"] !== false && a["additionalProperties"] === false)
        this.report(where, "unknown fields now refused");
    } else {
      for (const name of br)
        if (!ar.has(name) && name in ap) this.report(`${where}.${name}`, "field no longer always present");
      if (b["additionalProperties"] === false) {
        for (const name of Object.keys(ap))
          if (!(name in bp)) this.report(`${where}.${name}`, "new field where none were allowed");
      }
    }
  }

  alternatives(where: string, keyword: "oneOf" | "anyOf", b: Json, a: Json, flow: Flow): void {
    const bl = asArray(b[keyword]);
    const al = asArray(a[keyword]);
    if (bl.length === 0 && al.length === 0) return;
    for (let i = 0; i < Math.min(bl.length, al.length); i++)
      this.schema(`${where}<${keyword} ${i}>`, bl[i], al[i], flow);
    if (flow === "in" && al.length < bl.length)
      this.report(where, `${keyword} lost ${bl.length - al.length} alternative(s)`);
    if (flow === "out" && al.length > bl.length)
      this.report(where, `${keyword} gained ${al.length - bl.length} alternative(s)`);
  }

  /** `requestFlow`: how a request travels (`in` for our API, `out` for webhooks we send). */
  operation(where: string, beforePath: Json, afterPath: Json, b: Json, a: Json, requestFlow: Flow): void {
    const responseFlow: Flow = requestFlow === "in" ? "out" : "in";
    this.parameters(where, beforePath, afterPath, b, a, requestFlow);
    this.requestBody(where, b, a, requestFlow);

    const bResponses = asObject(b["responses"]) ?? {};
    const aResponses = asObject(a["responses"]) ?? {};
    for (const [status, value] of Object.entries(bResponses)) {
      const br = this.resolve(this.before, value) ?? {};
      const ar = this.resolve(this.after, aResponses[status]);
      if (ar === undefined) {
        this.report(`${where} ${status}`, "response removed");
        continue;
      }
      this.content(`${where} ${status}`, br, ar, responseFlow);
      const bh = asObject(br["headers"]) ?? {};
      const ah = asObject(ar["headers"]) ?? {};
      const byName = new Map(Object.entries(ah).map(([name, header]) => [name.toLowerCase(), header]));
      for (const [name, header] of Object.entries(bh)) {
        const match = byName.get(name.toLowerCase());
        if (match === undefined) this.report(`${where} ${status} header ${name}`, "header removed");
        else
          this.schema(
            `${where} ${status} header ${name}`,
            this.resolve(this.before, header)?.["schema"],
            this.resolve(this.after, match)?.["schema"],
            responseFlow,
          );
      }
    }

    if (requestFlow === "in" && this.isAnonymous(this.before, b) && !this.isAnonymous(this.after, a)) {
      this.report(where, "now requires authentication");
    }
  }

  isAnonymous(doc: Json, operation: Json): boolean {
    const security = asArray(operation["security"] ?? doc["security"]);
    return (
      security.length === 0 || security.some((requirement) => Object.keys(asObject(requirement) ?? {}).length === 0)
    );
  }

  parameters(where: string, beforePath: Json, afterPath: Json, b: Json, a: Json, flow: Flow): void {
    const collect = (doc: Json, path: Json, op: Json) => {
      const found = new Map<string, Json>();
      for (const value of [...asArray(path["parameters"]), ...asArray(op["parameters"])]) {
        const parameter = this.resolve(doc, value);
        if (parameter === undefined) continue;
        const name = String(parameter["name"]);
        found.set(`${String(parameter["in"])} ${parameter["in"] === "header" ? name.toLowerCase() : name}`, parameter);
      }
      return found;
    };
    const bp = collect(this.before, beforePath, b);
    const ap = collect(this.after, afterPath, a);
    for (const [key, parameter] of bp) {
      const label = `${where} ${key} parameter`;
      const match = ap.get(key);
      if (match === undefined) {
        this.report(label, "parameter removed");
        continue;
      }
      if (flow === "in" && match["required"] === true && parameter["required"] !== true)
        this.report(label, "now required");
      if (flow === "out" && parameter["required"] === true && match["required"] !== true)
        this.report(label, "no longer always sent");
      this.schema(label, parameter["schema"], match["schema"], flow);
    }
    if (flow === "in") {
      for (const [key, parameter] of ap)
        if (!bp.has(key) && parameter["required"] === true)
          this.report(`${where} ${key} parameter`, "new required parameter");
    }
  }

  requestBody(where: string, b: Json, a: Json, flow: Flow): void {
    const bb = this.resolve(this.before, b["requestBody"]);
    const ab = this.resolve(this.after, a["requestBody"]);
    const label = `${where} request`;
    if (bb === undefined) {
      if (ab?.["required"] === true && flow === "in") this.report(label, "new required body");
      return;
    }
    if (ab === undefined) {
      this.report(label, "body removed");
      return;
    }
    if (flow === "in" && ab["required"] === true && bb["required"] !== true) this.report(label, "body now required");
    this.content(label, bb, ab, flow);
  }

  content(where: string, b: Json, a: Json, flow: Flow): void {
    const bc = asObject(b["content"]) ?? {};
    const ac = asObject(a["content"]) ?? {};
    for (const [mediaType, value] of Object.entries(bc)) {
      const match = asObject(ac[mediaType]);
      if (match === undefined) this.report(`${where} ${mediaType}`, "media type removed");
      else this.schema(`${where} body`, asObject(value)?.["schema"], match["schema"], flow);
    }
  }
}

/** Every change from `before` to `after` that breaks a user of `before`; empty when compatible. */
export function findBreakingChanges(before: unknown, after: unknown): BreakingChange[] {
  const comparison = new Comparison(asObject(before) ?? {}, asObject(after) ?? {});
  for (const [section, requestFlow] of [
    ["paths", "in"],
    ["webhooks", "out"],
  ] as const) {
    const bItems = asObject(comparison.before[section]) ?? {};
    const aItems = asObject(comparison.after[section]) ?? {};
    for (const [path, value] of Object.entries(bItems)) {
      const label = section === "webhooks" ? `webhook ${path}` : path;
      const bItem = comparison.resolve(comparison.before, value) ?? {};
      const aItem = comparison.resolve(comparison.after, aItems[path]);
      if (aItem === undefined) {
        comparison.report(label, section === "webhooks" ? "webhook removed" : "path removed");
        continue;
      }
      for (const method of METHODS) {
        const bOp = asObject(bItem[method]);
        if (bOp === undefined) continue;
        const aOp = asObject(aItem[method]);
        const where = `${method.toUpperCase()} ${label}`;
        if (aOp === undefined) comparison.report(where, "operation removed");
        else comparison.operation(where, bItem, aItem, bOp, aOp, requestFlow);
      }
    }
  }
  return comparison.changes;
}

export type ReleaseBump = "major" | "minor" | "patch" | "none";

/**
 * Whether the pending changesets may release the API changes: any breaking change needs a major
 * bump (all our packages share one version line, so any package's major counts).
 */
export function compatibilityVerdict(
  breaking: readonly BreakingChange[],
  pendingBumps: readonly ReleaseBump[],
): { ok: boolean; report: string } {
  if (breaking.length === 0) return { ok: true, report: "no breaking changes since the last release" };
  const list = breaking.map((b) => `  - ${b.where}: ${b.change}`).join("\n");
  if (pendingBumps.includes("major")) {
    return {
      ok: true,
      report: `${breaking.length} breaking change(s) since the last release, released by a pending major changeset:\n${list}`,
    };
  }
  return {
    ok: false,
    report:
      `${breaking.length} breaking change(s) to the served OpenAPI document since the last release ` +
      `(spec/openapi.released.json), with no pending major changeset:\n${list}\n` +
      "Keep the API compatible, or add a changeset that bumps major (`pnpm changeset`).",
  };
}
