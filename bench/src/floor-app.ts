import { initTRPC, TRPCError } from "@trpc/server";
import Koa from "koa";
import { z } from "zod";

import { listenForHarness } from "./listen.ts";

const Plant = z.strictObject({ name: z.string().min(1), tag: z.string().optional() });
const NewPlant = Plant.extend({ id: z.number().int() });
export type FloorPlant = z.infer<typeof NewPlant>;

const Id = z
  .string()
  .regex(/^-?\d{1,19}$/)
  .transform((id) => BigInt(id));
const StoredPlant = z.object({ id: z.bigint(), name: z.string(), tag: z.string().optional() });
type FloorStoredPlant = z.infer<typeof StoredPlant>;
/** A JSON merge patch (RFC 7396) of a plant: `tag: null` removes the tag. */
const PlantPatch = z.strictObject({ name: z.string().min(1).optional(), tag: z.string().min(1).nullable().optional() });
type FloorPatch = z.infer<typeof PlantPatch>;

/** What the floor's update is told by its store: the plant and its new ETag, or why nothing was written. */
type FloorUpdateOutcome =
  | { outcome: "written"; plant: FloorStoredPlant; etag: string }
  | { outcome: "not_found" }
  | { outcome: "precondition_failed"; etag: string | undefined };

export type FloorHandlers = {
  create: (plant: FloorPlant) => Promise<void> | void;
  /** `GET /plants/{id}`; a floor without it answers 404 there. */
  read?: (id: bigint) => Promise<{ plant: FloorStoredPlant; etag: string } | undefined>;
  /** `PATCH /plants/{id}` with the request's `If-Match`. */
  update?: (id: bigint, patch: FloorPatch, ifMatch: string) => Promise<FloorUpdateOutcome>;
};

// Node has JSON.rawJSON; TypeScript's lib does not describe it yet.
const rawJson = (text: string) => (JSON as typeof JSON & { rawJSON(text: string): unknown }).rawJSON(text);

/** The plant as our server writes it: exact int64 id first, the tag only when there is one. */
const plantJson = ({ id, name, tag }: FloorStoredPlant) =>
  JSON.stringify(tag === undefined ? { id: rawJson(String(id)), name } : { id: rawJson(String(id)), name, tag });

const PLANT_PATH = /^\/plants\/(-?\d+)$/;

/**
 * The design card's request path with nothing of ours around it: Koa reads and parses the body,
 * a tRPC procedure validates it with zod (input and output) and hands it to the handler. No
 * authentication, access log, metrics or limits. Not a server to ship but a floor to read our
 * numbers against (bench/README.md): what our server adds on top is what those cost. Reads and
 * patches go the same way: the id from the path and the `If-Match` header into the procedure's
 * input, the plant out through its output schema, the ETag into the header. `around` runs first,
 * for a floor with more on its path (floor-observed-server.ts).
 */
export function serveFloor(name: string, handlers: FloorHandlers, around: readonly Koa.Middleware[] = []): void {
  const t = initTRPC.create();
  const create = t.procedure
    .input(NewPlant)
    .output(Plant)
    .mutation(async ({ input }) => {
      await handlers.create(input);
      return input.tag === undefined ? { name: input.name } : { name: input.name, tag: input.tag };
    });
  const read = t.procedure
    .input(z.object({ id: Id }))
    .output(z.object({ plant: StoredPlant, etag: z.string() }))
    .query(async ({ input }) => {
      const found = await handlers.read?.(input.id);
      if (found === undefined) throw new TRPCError({ code: "NOT_FOUND" });
      return found;
    });
  const update = t.procedure
    .input(z.object({ id: Id, ifMatch: z.string().min(1), patch: PlantPatch }))
    .output(z.object({ plant: StoredPlant, etag: z.string() }))
    .mutation(async ({ input }) => {
      const outcome = await handlers.update!(input.id, input.patch, input.ifMatch);
      if (outcome.outcome === "not_found") throw new TRPCError({ code: "NOT_FOUND" });
      if (outcome.outcome === "precondition_failed") throw new TRPCError({ code: "PRECONDITION_FAILED" });
      return { plant: outcome.plant, etag: outcome.etag };
    });
  const caller = t.createCallerFactory(t.router({ create, read, update }))({});

  const app = new Koa();
  for (const middleware of around) app.use(middleware);
  app.use(async (ctx) => {
    const id = PLANT_PATH.exec(ctx.path)?.[1];
    const route =
      ctx.path === "/plants" && ctx.method === "POST"
        ? "create"
        : id !== undefined && ctx.method === "GET" && handlers.read !== undefined
          ? "read"
          : id !== undefined && ctx.method === "PATCH" && handlers.update !== undefined
            ? "update"
            : undefined;
    if (route === undefined) {
      ctx.status = 404;
      return;
    }
    try {
      if (route === "read") {
        const { plant, etag } = await caller.read({ id: id! });
        ctx.set("ETag", etag);
        ctx.type = "application/json";
        ctx.body = plantJson(plant);
        return;
      }
      // Read and parsed exactly as the baseline does.
      const chunks: Buffer[] = [];
      for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
      const body: unknown = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      if (route === "create") {
        const output = await caller.create(body as z.input<typeof NewPlant>);
        ctx.status = 200;
        ctx.type = "application/json";
        ctx.body = JSON.stringify(output);
        return;
      }
      const { plant, etag } = await caller.update({
        id: id!,
        ifMatch: ctx.get("If-Match"),
        patch: body as z.input<typeof PlantPatch>,
      });
      ctx.set("ETag", etag);
      ctx.type = "application/json";
      ctx.body = plantJson(plant);
    } catch (error) {
      // Only what the load can meet: the harness counts any other status as a failure.
      if (!(error instanceof TRPCError)) throw error;
      ctx.status = error.code === "NOT_FOUND" ? 404 : error.code === "PRECONDITION_FAILED" ? 412 : 500;
    }
  });

  listenForHarness(app, name);
}
