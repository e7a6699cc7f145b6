import cors from "@koa/cors";
import { stringifyJsonLossless } from "@plantstore/schema";
import { TRPCError } from "@trpc/server";
import Koa from "koa";
import type { Logger } from "pino";

import type { Authenticator } from "../auth/principal.ts";
import { insufficientScope } from "../auth/scopes.ts";
import { ApiError, toApiError } from "../errors.ts";
import { LogThrottle } from "../log-throttle.ts";
import type { Metrics } from "../metrics.ts";
import type { RateLimits } from "../rate-limit/rate-limits.ts";
import type { AppRouter } from "../router/root.ts";
import type { PlantStore } from "../storage/plant-store.ts";
import type { WriteHealth } from "../storage/write-health.ts";
import type { Context } from "../trpc.ts";
import { logAppErrors } from "./app-errors.ts";
import { authenticateRequest } from "./authenticate.ts";
import { callProcedure } from "./call-procedure.ts";
import { clientAddressOf } from "./client-address.ts";
import { decodeUnreserved } from "./normalize-path.ts";
import { buildOpenApiDocument } from "./openapi-document.ts";
import { plainPaths } from "./plain-paths.ts";
import type { EventStreams } from "./plant-events.ts";
import { readPreconditions } from "./precondition-headers.ts";
import { assertIdentityEncoding, assertMediaType, readJsonObject } from "./read-json-body.ts";
import { requestContext, type RequestState } from "./request-context.ts";
import { type RouteMatch, RouteTable } from "./routes.ts";
import { JSON_CONTENT_TYPE, sendError } from "./send-error.ts";
import { strictQuery } from "./strict-query.ts";
import { closeWhenBodyUnread } from "./unread-body.ts";
import { webAppPaths } from "./web-app.ts";

export type AppOptions = {
  router: AppRouter;
  store: PlantStore;
  authenticator: Authenticator;
  logger: Logger;
  bodyLimitBytes: number;
  corsOrigins?: readonly string[];
  metrics: Metrics;
  /** `token`: /metrics needs a valid bearer token; `public`: open; `off`: not served on this app. */
  metricsAccess: "token" | "public" | "off";
  /** Per-token and failed-authentication limits; none when undefined. */
  rateLimits?: RateLimits | undefined;
  /** Peers whose `X-Forwarded-For` names the client (IPs, CIDRs, keywords); none when empty. */
  trustedProxies?: readonly string[];
  /** How the store's writes fare, for /readyz; readiness then looks at the database alone when undefined. */
  writeHealth?: WriteHealth | undefined;
  /** Bounds the "request failed" lines during an outage; the caller flushes it on shutdown. */
  logThrottle?: LogThrottle | undefined;
  /** The change feed's streams (`GET /plants/events`); not served when undefined. */
  eventStreams?: EventStreams | undefined;
  /** The built web console's folder, served at /app (web-app.ts); no /app when undefined. */
  webDir?: string | undefined;
};

/**
 * The server hands `Expect: 100-continue` requests to the app without the interim answer (its
 * 'checkContinue' listener), so a request refused from its headers gets its final answer and no
 * invitation to send a body first (RFC 9110 §10.1.1).
 */
function continueIfExpected(ctx: Koa.Context): void {
  if (!ctx.res.headersSent && ctx.get("expect").toLowerCase() === "100-continue") ctx.res.writeContinue();
}

/** What a failure was underneath the wrappers (TRPCError, ApiError): the kind its log lines are counted under. */
function rootCause(thrown: unknown): unknown {
  let cause = thrown;
  for (let depth = 0; depth < 8 && cause instanceof Error && cause.cause !== undefined; depth++) {
    if (!(cause instanceof TRPCError || cause instanceof ApiError)) break;
    cause = cause.cause;
  }
  return cause;
}

function failureKind(error: ApiError, thrown: unknown): { kind: string; type: string; message: string } {
  const cause = rootCause(thrown);
  const type = cause instanceof Error ? cause.name : typeof cause;
  // A message may carry a value that differs per request; a prefix keeps most such kinds together.
  const message = (cause instanceof Error ? cause.message : String(cause)).slice(0, 200);
  return { kind: `${error.code} ${type}: ${message}`, type, message };
}

/**
 * The Koa app: a thin REST adapter over the tRPC router. trpc-to-openapi supplies the route
 * metadata, path templates and the OpenAPI document; this adapter reads the body itself (exact
 * int64, no coercion, any `application/json` parameters), calls the procedure directly (through
 * call-procedure.ts), and answers every failure with the interface's `Error` body. See
 * docs/api-decisions.md for why the stock `createOpenApiKoaMiddleware` is not used.
 */
export function createApp(options: AppOptions): Koa {
  const { router, store, authenticator, logger, bodyLimitBytes, metrics, metricsAccess, rateLimits } = options;
  // The client address comes from clientAddress, never from ctx.ip: Koa's proxy mode would believe
  // the left-most X-Forwarded-For entry, which the client writes, from any peer.
  const clientAddress = clientAddressOf(options.trustedProxies ?? []);
  const openApiJson = JSON.stringify(buildOpenApiDocument(router, { bodyLimitBytes }));
  const authenticate = (ctx: Koa.Context) => authenticateRequest(ctx, authenticator, rateLimits, clientAddress);
  const routes = new RouteTable(router, [
    ...plainPaths({ openApiJson, store, writeHealth: options.writeHealth, metrics, metricsAccess, authenticate }),
    // A plain path: trpc-to-openapi's procedures answer once, and a stream never ends.
    ...(options.eventStreams === undefined ? [] : [options.eventStreams.path(authenticate)]),
    ...(options.webDir === undefined ? [] : webAppPaths(options.webDir)),
  ]);
  const app = new Koa();
  logAppErrors(app, logger);
  app.proxy = false;

  const throttle = options.logThrottle ?? new LogThrottle();
  app.use(requestContext(logger, metrics, throttle));
  app.use(closeWhenBodyUnread());
  // Before anything routes: the preflight check, the route table and the docs page read ctx.path.
  app.use((ctx, next) => {
    const path = decodeUnreserved(ctx.path);
    if (path !== ctx.path) ctx.path = path;
    return next();
  });

  /** 404 for a path with no operation, 405 with `Allow` for a method the path does not answer. */
  const matchOrThrow = (method: string, path: string): RouteMatch => {
    const matched = routes.match(method === "HEAD" ? "GET" : method, path);
    if (matched === undefined) throw new ApiError("NOT_FOUND", `no operation at ${path}`);
    if ("allow" in matched) {
      throw new ApiError("METHOD_NOT_ALLOWED", `${method} is not allowed on ${path}`, {
        headers: { Allow: matched.allow.join(", ") },
      });
    }
    return matched;
  };

  /** `OPTIONS *` and `OPTIONS <path>` (RFC 9110 §9.3.7): 204 with `Allow`, and `Accept-Patch` where PATCH is. */
  const answerOptions = (ctx: Koa.Context, state: RequestState): void => {
    if (ctx.url === "*") {
      state.route = "*";
      ctx.set("Allow", routes.methods().join(", "));
    } else {
      const resource = routes.options(ctx.path);
      if (resource === undefined) throw new ApiError("NOT_FOUND", `no operation at ${ctx.path}`);
      state.route = resource.template;
      ctx.set("Allow", resource.allow.join(", "));
      if (resource.acceptPatch !== undefined) ctx.set("Accept-Patch", resource.acceptPatch);
    }
    ctx.status = 204;
  };

  const corsOrigins = options.corsOrigins ?? [];
  if (corsOrigins.length > 0) {
    // A preflight asks whether the real request may be sent; @koa/cors alone says yes to any path
    // and method. Answer it as the real request would be answered where that is 404 or 405, so a
    // browser reports the wrong URL or method instead of sending a request bound to fail.
    app.use(async (ctx, next) => {
      const requested = ctx.method === "OPTIONS" ? ctx.get("access-control-request-method") : "";
      if (requested !== "") {
        try {
          matchOrThrow(requested.toUpperCase(), ctx.path);
        } catch (thrown) {
          sendError(ctx, toApiError(thrown));
          return;
        }
      }
      await next();
    });
    // Outermost but for the check above, so error answers carry the CORS headers too and a browser can read them.
    app.use(
      cors({
        origin: (ctx) => {
          const origin = ctx.get("origin");
          return corsOrigins.includes("*") || corsOrigins.includes(origin) ? origin : "";
        },
        allowMethods: ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"],
        allowHeaders: ["Authorization", "Content-Type", "X-Request-Id", "If-Match", "If-None-Match", "Last-Event-ID"],
        // Every response header a caller may need to read (Access-Control-Expose-Headers: the
        // CORS-safelisted ones need no listing): the request id for support, paging, rate limits.
        exposeHeaders: [
          "X-Request-Id",
          "WWW-Authenticate",
          "Retry-After",
          "Allow",
          "Link",
          "RateLimit",
          "RateLimit-Policy",
          "Accept-Encoding",
          "ETag",
          "Location",
          "Accept-Patch",
        ],
        maxAge: 600,
      }),
    );
  }

  const errorCount = (code: string) => metrics.errors.labels({ code });
  app.use(async (ctx, next) => {
    try {
      await next();
    } catch (thrown) {
      const error = toApiError(thrown);
      errorCount(error.code).inc();
      if (error.status >= 500) {
        const { requestId, route } = ctx.state as RequestState;
        const { method } = ctx;
        const { kind, type, message } = failureKind(error, thrown);
        throttle.log(
          kind,
          () => logger.error({ reqId: requestId, err: thrown, method, route, code: error.code }, "request failed"),
          (repeats) =>
            logger.error(
              {
                reqId: requestId,
                method,
                route,
                code: error.code,
                repeats,
                intervalMs: throttle.intervalMs,
                type,
                message,
              },
              "request failed (repeats)",
            ),
        );
      }
      sendError(ctx, error);
    }
  });

  app.use(async (ctx) => {
    const state = ctx.state as RequestState;
    // A CORS preflight goes on as before (above, or 405 when no origin is allowed); any other
    // OPTIONS asks what the resource, or with `*` the server, can do: no token, no body.
    if (ctx.method === "OPTIONS" && ctx.get("access-control-request-method") === "") {
      answerOptions(ctx, state);
      return;
    }
    const matched = matchOrThrow(ctx.method, ctx.path);
    if ("plain" in matched) {
      state.route = matched.plain.path;
      await matched.plain.handler(ctx);
      return;
    }
    const { route, params } = matched;
    state.route = route.template;

    // The token and its scope come before the body is read: a caller that may not make this
    // request learns nothing about validation, and is not invited to send a body (no 100 Continue).
    const principal = route.protect ? await authenticateRequest(ctx, authenticator, rateLimits, clientAddress) : null;
    if (principal !== null) {
      const refused = insufficientScope(principal, route.scopes);
      if (refused !== undefined) throw refused;
    }

    const fromUrl = route.method === "GET" || route.method === "DELETE";
    let input: Record<string, unknown>;
    if (fromUrl) {
      // Query values stay strings (repeated ones become arrays and are refused); the schemas parse them strictly.
      // Without a query string there is nothing to parse: Koa's parser builds a URLSearchParams even
      // for none, ~1 µs of a read by id (bench/README.md).
      input = ctx.querystring === "" ? params : { ...strictQuery(ctx), ...params };
    } else {
      assertMediaType(ctx.get("content-type") || undefined, route.mediaType);
      assertIdentityEncoding(ctx.get("content-encoding") || undefined);
      // Routing, authentication and the declared length are decided: only now is the body asked for.
      const body = await readJsonObject(ctx.req, bodyLimitBytes, () => continueIfExpected(ctx));
      // The path names the resource; a body naming it too could disagree, so it is refused, not overridden.
      const named = Object.keys(params).find((name) => Object.hasOwn(body, name));
      if (named !== undefined) {
        throw new ApiError("VALIDATION_FAILED", `${named} must not be sent in the body: the path names the plant`);
      }
      input = Object.keys(params).length === 0 ? body : { ...body, ...params };
    }

    const trpcContext: Context = {
      principal,
      store,
      responseHeaders: new Map(),
      preconditions: readPreconditions(ctx.req.headers),
      response: {},
    };
    let output: unknown;
    try {
      output = await callProcedure({
        procedure: route.procedure,
        path: route.procedurePath,
        type: route.type,
        ctx: trpcContext,
        input,
      });
    } catch (thrown) {
      const error = toApiError(thrown);
      // Input that came from the path or query is a parameter problem, not a body problem.
      if (fromUrl && error.code === "VALIDATION_FAILED") throw new ApiError("INVALID_PARAMETER", error.message);
      throw error;
    }
    for (const [name, value] of trpcContext.responseHeaders) ctx.set(name, value);
    const status = trpcContext.response.status;
    // A 304 has no body (RFC 9110 §15.4.5): the headers say all a cache needs.
    if (output === undefined || status === 304) {
      ctx.status = status ?? 204;
      return;
    }
    ctx.status = status ?? 200;
    ctx.set("Content-Type", JSON_CONTENT_TYPE);
    // Ids in answers are exact int64 JSON integers.
    ctx.body = stringifyJsonLossless(output);
  });

  return app;
}
