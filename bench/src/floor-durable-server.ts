import { openStore } from "@plantstore/server";

import { serveFloor } from "./floor-app.ts";

/**
 * The floor (floor-app.ts) storing each plant durably through our own store (group commit, one
 * fsync or WAL flush per batch) on the target's DATABASE_URL, SQLite or PostgreSQL: the design
 * card's stack plus durable storage, and nothing else of ours. Run it beside ours with
 * `pnpm bench --compare-bin bench/src/floor-durable-server.ts` (add `--backend postgres` for
 * PostgreSQL).
 */
const databaseUrl = process.env["DATABASE_URL"];
if (databaseUrl === undefined) throw new Error("floor-durable-server needs DATABASE_URL");
const store = await openStore(databaseUrl, { durability: "full" });
serveFloor("durable floor", async (plant) => {
  const { id, ...rest } = plant;
  const outcome = await store.create({ id: BigInt(id), ...rest });
  if (outcome === "conflict") throw new Error(`id ${plant.id} is taken`);
});
