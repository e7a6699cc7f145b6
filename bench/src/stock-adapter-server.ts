import { DatabaseSync } from "node:sqlite";

import { initTRPC, TRPCError } from "@trpc/server";
import Koa from "koa";
import { createOpenApiKoaMiddleware, type OpenApiMeta } from "trpc-to-openapi";
import { z } from "zod";

import { listenForHarness } from "./listen.ts";

/**
 * The design card's stack wired the stock way, as a reference to measure against (README,
 * Performance): Koa + trpc-to-openapi's `createOpenApiKoaMiddleware` + zod, one durable SQLite
 * insert (WAL, synchronous=FULL) per request, a static bearer token. It is what our server
 * replaced, not a target to ship: it coerces bodies, rounds ids above 2^53 and answers errors in
 * its own shape. Run it beside ours with `pnpm bench --compare-bin bench/src/stock-adapter-server.ts`.
 */
const path = (process.env["DATABASE_URL"] ?? "sqlite::memory:").replace(/^sqlite:/, "");
const db = new DatabaseSync(path);
db.exec("PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;");
db.exec("CREATE TABLE IF NOT EXISTS plants (id INTEGER PRIMARY KEY, name TEXT NOT NULL, tag TEXT) STRICT");
const insert = db.prepare("INSERT INTO plants (id, name, tag) VALUES (?, ?, ?)");
const tokens = new Set((process.env["PLANTSTORE_TOKENS"] ?? "").split(",").filter((t) => t.length > 0));

const t = initTRPC.meta<OpenApiMeta>().context<{ token: string }>().create();
const authed = t.procedure.use(({ ctx, next }) => {
  if (!tokens.has(ctx.token)) throw new TRPCError({ code: "UNAUTHORIZED" });
  return next();
});
const Plant = z.object({ name: z.string(), tag: z.string().optional() });
const router = t.router({
  create: authed
    .meta({ openapi: { method: "POST", path: "/plants", protect: true } })
    .input(Plant.extend({ id: z.number().int() }))
    .output(Plant)
    .mutation(({ input }) => {
      insert.run(input.id, input.name, input.tag ?? null);
      return input.tag === undefined ? { name: input.name } : { name: input.name, tag: input.tag };
    }),
});

const app = new Koa();
app.use(
  createOpenApiKoaMiddleware({
    router,
    createContext: ({ req }) => ({ token: (req.headers.authorization ?? "").replace(/^Bearer /i, "") }),
  }),
);
listenForHarness(app, "stock adapter");
