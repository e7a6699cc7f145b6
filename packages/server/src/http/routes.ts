import type { AnyProcedure } from "@trpc/server";
import { forEachOpenApiProcedure, getPathRegExp, normalizePath, type OpenApiMethod } from "trpc-to-openapi";

import type { AppRouter } from "../router/root.ts";
import type { Meta } from "../trpc.ts";
import type { PlainPath } from "./plain-paths.ts";

export type ProcedureRoute = {
  method: OpenApiMethod;
  /** The OpenAPI path template (`/plants/{id}`), used as the route label in logs and metrics. */
  template: string;
  pattern: RegExp;
  /** The tRPC path (`plants.create`), for errors and logs. */
  procedurePath: string;
  procedure: AnyProcedure;
  type: "query" | "mutation";
  protect: boolean;
  /** The one media type the body is read in (`meta.requestMediaType`). */
  mediaType: string;
};

export type RouteMatch = { route: ProcedureRoute; params: Record<string, string> } | { plain: PlainPath };

/**
 * The REST route table, built once from the routers' trpc-to-openapi metadata with its own path
 * templating (`getPathRegExp`). Differences from the stock adapter, on purpose: matching is
 * case-sensitive and exact (RFC 3986 paths are case-sensitive; `/Plants/` is another resource),
 * and a path known under other methods yields `allow` so the caller can answer 405. Plain paths
 * match exactly and before the procedures.
 */
export class RouteTable {
  readonly #routes: ProcedureRoute[] = [];
  readonly #plain: Map<string, PlainPath>;

  constructor(router: AppRouter, plainPaths: readonly PlainPath[]) {
    this.#plain = new Map(plainPaths.map((plain) => [plain.path, plain]));
    forEachOpenApiProcedure<Meta>(router._def.procedures, ({ path, type, procedure, meta }) => {
      if (type === "subscription") return;
      const template = normalizePath(meta.openapi.path);
      this.#routes.push({
        method: meta.openapi.method,
        template,
        // trpc-to-openapi's pattern, minus its case-insensitive flag.
        pattern: new RegExp(getPathRegExp(template).source),
        procedurePath: path,
        procedure: procedure as AnyProcedure,
        type,
        protect: meta.openapi.protect !== false,
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
    // The method first: a string comparison is cheaper than a pattern, and on the usual request
    // only the routes of its own method need one.
    for (const route of this.#routes) {
      if (route.method !== method) continue;
      const found = route.pattern.exec(path);
      if (found !== null) return { route, params: { ...found.groups } };
    }
    const allow = new Set<string>();
    for (const route of this.#routes) if (route.pattern.test(path)) allow.add(route.method);
    if (allow.size === 0) return undefined;
    return { allow: withHead(allow) };
  }
}

/** The app answers HEAD wherever it answers GET (RFC 9110 §9.3.2), so Allow says so too. */
function withHead(methods: Iterable<string>): string[] {
  const allow = new Set(methods);
  if (allow.has("GET")) allow.add("HEAD");
  return [...allow].sort();
}
