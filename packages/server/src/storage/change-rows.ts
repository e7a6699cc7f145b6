import type { Change, ChangeKind } from "../changes/change-log.ts";

/** A change-log row as both backends read it: int8 as BigInt (SQLite may give small numbers). */
export type StoredChange = {
  position: bigint | number;
  kind: string;
  plant_id: bigint | number;
  data: string;
  tag: string | null;
  previous_tag: string | null;
  at: bigint | number;
};

/** The columns every read of the log selects, in StoredChange's names. */
export const CHANGE_COLUMNS = "position, kind, plant_id, data, tag, previous_tag, at";

export function changeFromRow(row: StoredChange): Change {
  return {
    position: BigInt(row.position),
    kind: row.kind as ChangeKind,
    plantId: BigInt(row.plant_id),
    data: row.data,
    tag: row.tag,
    previousTag: row.previous_tag,
    at: new Date(Number(row.at)),
  };
}

/** What head() and oldest() answer from the log's lowest and highest positions (null when it is empty). */
export function logBounds(
  lowest: bigint | number | null,
  highest: bigint | number | null,
): { head: bigint; oldest: bigint } {
  const head = highest === null ? 0n : BigInt(highest);
  return { head, oldest: lowest === null ? head + 1n : BigInt(lowest) };
}

/**
 * Pruning, both backends: the changes older than the retention go, except the newest change of
 * all, which stays whatever its age. Positions are never reused (the next is above the newest
 * ever written) and head() stays the true head after a quiet day, so a subscriber that was
 * up to date resumes without a reset.
 */
export type ChangeRetention = {
  /** Deletes up to `limit` changes recorded before `before` (ms since the epoch); how many it deleted. */
  pruneChanges(before: number, limit: number): Promise<number>;
};
