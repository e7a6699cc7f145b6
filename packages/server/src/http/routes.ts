import type { AnyProcedure } from "@trpc/server";
import {
  forEachOpenApiProcedure,
  normalizePath,
  type OpenApiMethod,
  type OpenApiProcedureRecord,
} from "trpc-to-openapi";

import type { Scope } from "../auth/principal.ts";
import type { Meta } from "../trpc.ts";
import type { PlainPath } from "./plain-paths.ts";

export type ProcedureRoute = {
  method: OpenApiMethod;
  /** The OpenAPI path template (`/plants/{id}`), used as the route label in logs and metrics. */
  template: string;
  /** The template's segments between slashes: a literal to equal, or a parameter's name (`{id}`). */
  segments: readonly Segment[];
  /** The tRPC path (`plants.create`), for errors and logs. */
  procedurePath: string;
  procedure: AnyProcedure;
  type: "query" | "mutation";
  protect: boolean;
  /** The scopes its token must hold (`meta.scopes`), checked before the body is read. */
  scopes: readonly Scope[];
  /** The one media type the body is read in (`meta.requestMediaType`). */
  mediaType: string;
};

type Segment = { literal: string } | { param: string };

export type RouteMatch = { route: ProcedureRoute; params: Record<string, string> } | { plain: PlainPath };

/**
 * A template's segments. A parameter takes a whole segment, as every template here does; one
 * inside a segment (`/plants/{id}.json`) is refused when the table is built, not matched wrongly.
 */
function segmentsOf(template: string): Segment[] {
  return template.split("/").map((piece) => {
    const param = /^\{([^{}/]+)\}$/.exec(piece)?.[1];
    if (param !== undefined) return { param };
    if (piece.includes("{") || piece.includes("}"))
      throw new Error(`path template ${template}: a parameter must be a whole segment`);
    return { literal: piece };
  });
}

/** The parameters of `parts` (a path split at its slashes) when they fit the segments, else undefined. */
function paramsOf(segments: readonly Segment[], parts: readonly string[]): Record<string, string> | undefined {
  if (parts.length !== segments.length) return undefined;
  let params: Record<string, string> | undefined;
  for (let i = 0; i < parts.length; i++) {
    const segment = segments[i]!;
    const part = parts[i]!;
    if ("literal" in segment) {
      if (part !== segment.literal) return undefined;
    } else {
      // A parameter is never empty: `/plants/` names no plant.
      if (part === "") return undefined;
      (params ??= {})[segment.param] = part;
    }
  }
  return params ?? {};
}

/**
 * The REST route table, built once from the routers' trpc-to-openapi metadata (its path
 * templates, normalised by its `normalizePath`). Differences from the stock adapter, on purpose:
 * matching is case-sensitive and exact (RFC 3986 paths are case-sensitive; `/Plants/` is another
 * resource), and a path known under other methods yields `allow` so the caller can answer 405.
 * Plain paths match exactly and before the procedures.
 *
 * A path is split at its slashes once and compared segment by segment, which matches what
 * trpc-to-openapi's pattern (`{id}` → `[^/]+`, anchored) matches. That pattern, a named-group
 * regex run per route with its groups copied out, was the largest single part of ours a read has
 * beyond its floor: 2.25 µs of a read's 95 µs in a profile on a slow machine, 1.23 µs now
 * (bench/README.md).
 */
export class RouteTable {
  readonly #routes: ProcedureRoute[] = [];
  readonly #plain: Map<string, PlainPath>;

  constructor(router: { _def: { procedures: OpenApiProcedureRecord } }, plainPaths: readonly PlainPath[]) {
    this.#plain = new Map(plainPaths.map((plain) => [plain.path, plain]));
    forEachOpenApiProcedure<Meta>(router._def.procedures, ({ path, type, procedure, meta }) => {
      if (type === "subscription") return;
      const template = normalizePath(meta.openapi.path);
      this.#routes.push({
        method: meta.openapi.method,
        template,
        segments: segmentsOf(template),
        procedurePath: path,
        procedure: procedure as AnyProcedure,
        type,
        protect: meta.openapi.protect !== false,
        scopes: meta.scopes ?? [],
        mediaType: meta.requestMediaType ?? "application/json",
      });
    });
  }

  match(method: string, path: string): RouteMatch | { allow: string[] } | undefined {
    const plain = this.#plain.get(path);
    if (plain !== undefined) {
      if (plain.methods.includes(method)) return { plain };
      // A plain path names a resource of its own: `/plants/events` is the feed, not a plant whose
      // id is "events", so DELETE there is a method the feed does not answer (405), not a bad id.
      return { allow: withHead(plain.methods) };
    }
    const parts = path.split("/");
    for (const route of this.#routes) {
      if (route.method !== method) continue;
      const params = paramsOf(route.segments, parts);
      if (params !== undefined) return { route, params };
    }
    const allow = new Set<string>();
    for (const route of this.#routes) if (paramsOf(route.segments, parts) !== undefined) allow.add(route.method);
    if (allow.size === 0) return undefined;
    return { allow: withHead(allow) };
  }

  /**
   * What `OPTIONS` on `path` answers (RFC 9110 §9.3.7): its template (the route label), the methods
   * it allows, OPTIONS among them, and the patch format its PATCH reads (`Accept-Patch`, RFC 5789
   * §3.1); undefined where no resource is.
   */
  options(path: string): { template: string; allow: string[]; acceptPatch: string | undefined } | undefined {
    const plain = this.#plain.get(path);
    if (plain !== undefined)
      return { template: plain.path, allow: withHead([...plain.methods, "OPTIONS"]), acceptPatch: undefined };
    const parts = path.split("/");
    const here = this.#routes.filter((route) => paramsOf(route.segments, parts) !== undefined);
    if (here.length === 0) return undefined;
    return {
      template: here[0]!.template,
      allow: withHead([...here.map((route) => route.method), "OPTIONS"]),
      acceptPatch: here.find((route) => route.method === "PATCH")?.mediaType,
    };
  }

  /** Every method some path answers, OPTIONS included: what `OPTIONS *` lists. */
  methods(): string[] {
    const all = [...this.#routes.map((route) => route.method), "OPTIONS"];
    for (const plain of this.#plain.values()) all.push(...plain.methods);
    return withHead(all);
  }
}

/** The app answers HEAD wherever it answers GET (RFC 9110 §9.3.2), so Allow says so too. */
function withHead(methods: Iterable<string>): string[] {
  const allow = new Set(methods);
  if (allow.has("GET")) allow.add("HEAD");
  return [...allow].sort();
}
