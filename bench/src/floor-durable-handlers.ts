import { openStore } from "@plantstore/server";

import type { FloorHandlers } from "./floor-app.ts";

/**
 * The floor's handlers on our own store, on the target's DATABASE_URL, SQLite or PostgreSQL.
 * Creations and patches are durable (group commit, one fsync or WAL flush per batch); a patch is
 * the store's conditional update, the `If-Match` checked and the change written in one step, as
 * ours does it, and every ETag is the store's keyed one, computed as ours computes it.
 */
export async function durableFloorHandlers(): Promise<FloorHandlers> {
  const databaseUrl = process.env["DATABASE_URL"];
  if (databaseUrl === undefined) throw new Error("a durable floor needs DATABASE_URL");
  const store = await openStore(databaseUrl, { durability: "full" });
  return {
    create: async (plant) => {
      const { id, ...rest } = plant;
      const outcome = await store.create({ id: BigInt(id), ...rest });
      if (outcome === "conflict") throw new Error(`id ${plant.id} is taken`);
    },
    read: async (id) => {
      const plant = await store.get(id);
      return plant === undefined ? undefined : { plant, etag: await store.etag(plant) };
    },
    update: async (id, patch, ifMatch) => {
      const outcome = await store.update(id, patch, [ifMatch]);
      if (outcome.outcome === "written")
        return { outcome: "written", plant: outcome.plant, etag: await store.etag(outcome.plant) };
      if (outcome.outcome === "not_found") return outcome;
      return {
        outcome: "precondition_failed",
        etag: outcome.current === undefined ? undefined : await store.etag(outcome.current),
      };
    },
  };
}
