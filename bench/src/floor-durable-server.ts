import { openStore, plantETag } from "@plantstore/server";

import { serveFloor } from "./floor-app.ts";

/**
 * The floor (floor-app.ts) on our own store, on the target's DATABASE_URL, SQLite or PostgreSQL:
 * the design card's stack plus durable storage, and nothing else of ours. Creations and patches
 * are durable (group commit, one fsync or WAL flush per batch); a patch is the store's conditional
 * update, the `If-Match` checked and the change written in one step, as ours does it. Run it beside
 * ours with `pnpm bench --compare-bin bench/src/floor-durable-server.ts` (add `--backend postgres`
 * for PostgreSQL); the read and update scenarios start it by themselves, as the target `floor`.
 */
const databaseUrl = process.env["DATABASE_URL"];
if (databaseUrl === undefined) throw new Error("floor-durable-server needs DATABASE_URL");
const store = await openStore(databaseUrl, { durability: "full" });
serveFloor("durable floor", {
  create: async (plant) => {
    const { id, ...rest } = plant;
    const outcome = await store.create({ id: BigInt(id), ...rest });
    if (outcome === "conflict") throw new Error(`id ${plant.id} is taken`);
  },
  read: async (id) => {
    const plant = await store.get(id);
    return plant === undefined ? undefined : { plant, etag: plantETag(plant) };
  },
  update: async (id, patch, ifMatch) => {
    const outcome = await store.update(id, patch, [ifMatch]);
    if (outcome.outcome === "written")
      return { outcome: "written", plant: outcome.plant, etag: plantETag(outcome.plant) };
    if (outcome.outcome === "not_found") return outcome;
    return {
      outcome: "precondition_failed",
      etag: outcome.current === undefined ? undefined : plantETag(outcome.current),
    };
  },
});
