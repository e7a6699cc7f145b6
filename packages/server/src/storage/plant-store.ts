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

/** What a JSON merge patch (RFC 7396) changes in a plant: a missing key keeps the field, `tag: null` removes the tag. */
export type PlantChange = { name?: string; tag?: string | null };

/**
 * An `If-Match` as the store checks it (RFC 9110 §13.1.1): `*` (any stored plant) or the entity
 * tags a client holds, compared strongly with the store's `etag` of the stored plant. An `If-None-Match`
 * has the same shape (§13.1.2): it holds when no plant is stored, or (tags) when none of them is
 * the stored plant's, compared weakly.
 */
export type IfMatch = "*" | readonly string[];

/** A conditional write refused: `current` is the plant as stored now (none when the id is free), for the 412's `ETag`. */
export type PreconditionFailed = { outcome: "precondition_failed"; current: NewPlant | undefined };

/** A conditional write's result: the plant as stored after it, whether it was new, or why nothing was written. */
export type WriteOutcome =
  { outcome: "written"; plant: NewPlant; created: boolean } | { outcome: "not_found" } | PreconditionFailed;

export interface PlantStore {
  create(plant: NewPlant): Promise<CreateOutcome>;
  /**
   * Durable like create: resolved only after the delete has committed. With `ifMatch` or
   * `ifNoneMatch`, the check and the delete are one atomic step (a condition that fails: nothing
   * deleted). A missing plant is `not_found` whatever they say.
   */
  delete(id: bigint, ifMatch?: IfMatch, ifNoneMatch?: IfMatch): Promise<DeleteOutcome | PreconditionFailed>;
  get(id: bigint): Promise<NewPlant | undefined>;
  /**
   * Applies `change` to the stored plant if `ifMatch` holds and `ifNoneMatch` (when given) does
   * too, checked and written in one atomic step (one transaction; across instances on one
   * PostgreSQL too). A missing plant is `not_found` whatever they say. Durable like create.
   */
  update(id: bigint, change: PlantChange, ifMatch: IfMatch, ifNoneMatch?: IfMatch): Promise<WriteOutcome>;
  /**
   * Stores `plant` in place of the one under its id if `ifMatch` holds (a free id fails it) and
   * `ifNoneMatch` (when given) does too, or only if the id is free (`ifNoneMatch: "*"` alone, then
   * `created`). Atomic and durable like update.
   */
  replace(
    plant: NewPlant,
    precondition: { ifMatch: IfMatch; ifNoneMatch?: IfMatch | undefined } | { ifNoneMatch: "*" },
  ): Promise<WriteOutcome>;
  /**
   * The plant's strong entity tag, keyed by the secret this store's database keeps (plant-etag.ts):
   * the same on every store opened on that database, and the one `ifMatch` is compared with.
   * Asynchronous because the secret is read from the database, where it may first have to be added.
   */
  etag(plant: NewPlant): Promise<string>;
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
