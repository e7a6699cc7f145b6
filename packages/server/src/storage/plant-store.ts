import type { NewPlant } from "@plantstore/schema";

/** What an insert did: a new plant, a safe retry of an identical one, or a different plant under that id. */
export type CreateOutcome = "created" | "replayed" | "conflict";

/**
 * The storage seam: routes depend on this, never on a driver. A resolved promise means the
 * outcome is durable (committed), so a 200 can be sent.
 */
export interface PlantStore {
  create(plant: NewPlant): Promise<CreateOutcome>;
  get(id: bigint): Promise<NewPlant | undefined>;
  /** Cheap liveness probe of the underlying database. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
