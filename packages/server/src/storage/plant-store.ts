import type { NewPlant } from "@plantstore/schema";

/** What an insert did: a new plant, a safe retry of an identical one, or a different plant under that id. */
export type CreateOutcome = "created" | "replayed" | "conflict";

/**
 * The storage seam: routes depend on this, never on a driver. A resolved promise means the
 * outcome is durable (committed), so a 200 can be sent.
 */
export type DeleteOutcome = "deleted" | "not_found";

export type ListOptions = {
  limit: number;
  /** Only plants with an id strictly greater (the paging cursor). */
  after?: bigint | undefined;
  tag?: string | undefined;
};

export type MigrationStatus = { applied: number; known: number };

export interface PlantStore {
  create(plant: NewPlant): Promise<CreateOutcome>;
  /** Durable like create: resolved only after the delete has committed. */
  delete(id: bigint): Promise<DeleteOutcome>;
  get(id: bigint): Promise<NewPlant | undefined>;
  /** Plants ordered by id, at most `limit` of them. */
  list(options: ListOptions): Promise<NewPlant[]>;
  /** Cheap liveness probe of the underlying database. */
  ping(): Promise<void>;
  /** Schema migrations recorded in the database, and the newest this build knows (for /readyz). */
  migrations?(): Promise<MigrationStatus>;
  close(): Promise<void>;
}
