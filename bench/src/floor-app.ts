import { initTRPC } from "@trpc/server";
import Koa from "koa";
import { z } from "zod";

import { listenForHarness } from "./listen.ts";

const Plant = z.strictObject({ name: z.string().min(1), tag: z.string().optional() });
const NewPlant = Plant.extend({ id: z.number().int() });
export type FloorPlant = z.infer<typeof NewPlant>;

/**
 * The design card's request path with nothing of ours around it: Koa reads and parses the body,
 * a tRPC procedure validates it with zod (input and output) and hands it to `save`. No
 * authentication, access log, metrics or limits. Not a server to ship but a floor to read our
 * numbers against (bench/README.md): what our server adds on top is what those cost.
 */
export function serveFloor(name: string, save: (plant: FloorPlant) => Promise<void> | void): void {
  const t = initTRPC.create();
  const create = t.procedure
    .input(NewPlant)
    .output(Plant)
    .mutation(async ({ input }) => {
      await save(input);
      return input.tag === undefined ? { name: input.name } : { name: input.name, tag: input.tag };
    });
  const caller = t.createCallerFactory(t.router({ create }))({});

  const app = new Koa();
  app.use(async (ctx) => {
    if (ctx.method !== "POST" || ctx.path !== "/plants") {
      ctx.status = 404;
      return;
    }
    // Read and parsed exactly as the baseline does.
    const chunks: Buffer[] = [];
    for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
    const output = await caller.create(JSON.parse(Buffer.concat(chunks).toString("utf8")) as z.input<typeof NewPlant>);
    ctx.status = 200;
    ctx.type = "application/json";
    ctx.body = JSON.stringify(output);
  });

  listenForHarness(app, name);
}
