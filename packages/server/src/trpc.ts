import { initTRPC } from "@trpc/server";
import type { OpenApiMeta } from "trpc-to-openapi";

import type { Principal, Scope } from "./auth/principal.ts";
import { insufficientScope } from "./auth/scopes.ts";
import { ApiError, toTRPCError } from "./errors.ts";
import type { OperationDocs } from "./operation-docs.ts";
import type { Preconditions } from "./preconditions.ts";
import type { PlantStore } from "./storage/plant-store.ts";

/**
 * Built from plain inputs (the principal and the store), not from Koa's ctx, so tests and other
 * adapters can call procedures without HTTP.
 */
export type Context = {
  principal: Principal | null;
  store: PlantStore;
  /** Response headers a procedure wants sent (e.g. `Link`); the adapter applies them. */
  responseHeaders: Map<string, string>;
  /** The request's `If-Match` and `If-None-Match`, parsed by the adapter. */
  preconditions: Preconditions;
  /**
   * The status a procedure wants answered instead of 200 (201 for a creating PUT, 304 for a
   * matching If-None-Match, which the adapter sends without a body). An object, as tRPC copies ctx.
   */
  response: { status?: number };
};

/** Everything about an operation sits here: its route, the scopes it needs, and how the document describes it. */
export type Meta = OpenApiMeta<{ scopes?: readonly Scope[] } & OperationDocs>;

const t = initTRPC.meta<Meta>().context<Context>().create();

export const router = t.router;
export const createCallerFactory = t.createCallerFactory;

/**
 * Narrows ctx to an authenticated principal and enforces the procedure's `meta.scopes`. The HTTP
 * adapter checks the scopes already, before it reads a body; this check is for callers in process.
 */
export const protectedProcedure = t.procedure.use(({ ctx, meta, next }) => {
  const principal = ctx.principal;
  if (principal === null) {
    throw toTRPCError(new ApiError("MISSING_TOKEN", "a bearer token is required"));
  }
  const refused = insufficientScope(principal, meta?.scopes ?? []);
  if (refused !== undefined) throw toTRPCError(refused);
  // Only what changes: tRPC merges it over the current ctx itself (spreading ctx here too would copy it twice).
  return next({ ctx: { principal } });
});
