import type Koa from "koa";

import { ApiError, storeFailureAnswer } from "../errors.ts";
import type { Metrics } from "../metrics.ts";
import type { PlantStore } from "../storage/plant-store.ts";
import { StoreError } from "../storage/store-errors.ts";
import type { WriteHealth, WriteProblem } from "../storage/write-health.ts";
import { createDocsPage, DOCS_PATHS } from "./docs-page.ts";

/** A path the service answers itself rather than through a procedure: health, metrics, the document. */
export type PlainPath = {
  path: string;
  methods: readonly string[];
  handler: (ctx: Koa.Context) => void | Promise<void>;
};

export type PlainPathOptions = {
  /** The served OpenAPI document, already serialized. */
  openApiJson: string;
  store: PlantStore;
  /** Whether writes succeed; without it, readiness looks at the database alone. */
  writeHealth?: WriteHealth | undefined;
  metrics: Metrics;
  metricsAccess: "token" | "public" | "off";
  /** Throws the catalogued 401/429 unless the request carries a valid token. */
  authenticate: (ctx: Koa.Context) => Promise<unknown>;
};

const READ = ["GET", "HEAD"] as const;

/** What `/healthz` answers, here and on a connection past the cap (connections.ts). */
export const HEALTHZ_BODY = '{"status":"ok"}';

function notReady(problem: WriteProblem): ApiError {
  if (problem.stalledMs !== undefined) {
    const seconds = (problem.stalledMs / 1000).toFixed(1);
    return storeFailureAnswer(problem.kind, {
      message: `writes are stalled: one has waited ${seconds} s for the database (a lock or a long statement)`,
    });
  }
  const { message } = storeFailureAnswer(problem.kind);
  const held =
    problem.probeHeldMs === undefined
      ? ""
      : `; they failed again after a write probe had succeeded, so the next probe is in ${(problem.probeHeldMs / 1000).toFixed(1)} s`;
  return storeFailureAnswer(problem.kind, { message: `writes are failing: ${message}${held}` });
}

/**
 * Ready when the database answers, every migration this build knows is applied, and writes
 * succeed: a load balancer must not send writes to an instance whose disk is full or whose writes
 * wait on a lock. After a failed write (or PostgreSQL's circuit opening), readiness probes with a
 * real write (see WriteHealth and each store's probeWrite), so an instance taken out of rotation
 * comes back once writes succeed again. While PostgreSQL's circuit is open, the ping fails at once.
 */
async function readiness(store: PlantStore, writeHealth: WriteHealth | undefined, ctx: Koa.Context): Promise<void> {
  let migrations;
  try {
    await store.ping();
    migrations = await store.migrations?.();
  } catch (error) {
    // A database that answers but is held up is not a network problem: say so, so nobody looks at the network.
    if (error instanceof StoreError && error.kind !== "unavailable") {
      throw storeFailureAnswer(error.kind, { cause: error });
    }
    throw new ApiError("UNAVAILABLE", "the database is not reachable", { cause: error });
  }
  if (migrations !== undefined && migrations.applied < migrations.known) {
    throw new ApiError(
      "UNAVAILABLE",
      `database migrations are pending (${migrations.applied} of ${migrations.known} applied)`,
    );
  }
  const problem = await writeHealth?.check(store.probeWrite?.bind(store));
  if (problem !== undefined) throw notReady(problem);
  ctx.type = "application/json";
  ctx.body = JSON.stringify({ status: "ready", ...(migrations === undefined ? {} : { migrations }) });
}

/**
 * Every plain path, once: the route table derives 405 and `Allow` from it and the app dispatches
 * through it. Matched exactly and before the procedures, none of them needs a token except
 * `/metrics` under `metricsAccess: "token"`, which is absent altogether under `"off"`.
 */
export function plainPaths(options: PlainPathOptions): PlainPath[] {
  const { openApiJson, store, writeHealth, metrics, metricsAccess, authenticate } = options;
  const docsPage = createDocsPage();
  return [
    {
      path: "/openapi.json",
      methods: READ,
      handler: (ctx) => {
        ctx.type = "application/json";
        ctx.body = openApiJson;
      },
    },
    ...DOCS_PATHS.map((path): PlainPath => ({ path, methods: READ, handler: (ctx) => docsPage.serve(ctx) })),
    {
      path: "/healthz",
      methods: READ,
      handler: (ctx) => {
        ctx.type = "application/json";
        ctx.body = HEALTHZ_BODY;
      },
    },
    { path: "/readyz", methods: READ, handler: (ctx) => readiness(store, writeHealth, ctx) },
    ...(metricsAccess === "off"
      ? []
      : [
          {
            path: "/metrics",
            methods: READ,
            handler: async (ctx: Koa.Context) => {
              if (metricsAccess === "token") await authenticate(ctx);
              await serveMetrics(metrics, ctx);
            },
          },
        ]),
  ];
}

/** The registry in Prometheus' text format; a collector that fails fails the scrape (500). */
async function serveMetrics(metrics: Metrics, ctx: Koa.Context): Promise<void> {
  ctx.type = metrics.registry.contentType;
  ctx.body = await metrics.registry.metrics();
}

/**
 * The plain paths of the metrics port (PLANTSTORE_METRICS_PORT), which is for scrapers on a
 * private network: `/metrics` without a token, and with GET alone, as that port has always answered.
 */
export function metricsPortPaths(metrics: Metrics): PlainPath[] {
  return [{ path: "/metrics", methods: ["GET"], handler: (ctx) => serveMetrics(metrics, ctx) }];
}
