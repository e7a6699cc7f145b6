/** The three kinds of change the feed (GET /plants/events) and the webhooks carry. */
export type ChangeKind = "plant.created" | "plant.updated" | "plant.deleted";

/**
 * One committed change as the store's change log holds it, written in the same transaction as
 * the change itself.
 */
export type Change = {
  /** Its place in the one store-wide sequence: strictly increasing in commit order, never reused. */
  position: bigint;
  kind: ChangeKind;
  plantId: bigint;
  /** The event's `data`, exact JSON: the plant after the change (a deletion: `{"id":…}`), as its webhook carries it. */
  data: string;
  /** The plant's tag after the change and before it (either matches a `?tag=` filter); null when it had none. */
  tag: string | null;
  previousTag: string | null;
  /** When the change committed, as the store recorded it. */
  at: Date;
};

/**
 * The read side of the change log: what the change feed needs from a store.
 *
 * The guarantee the feed's "never miss, never repeat" rests on: `changesAfter` never returns a
 * position while a lower one may still commit, so a reader that resumes after the last position
 * it saw cannot skip one that committed later.
 */
export interface ChangeLog {
  /** Committed changes with a position above `after`, in position order, at most `limit`. */
  changesAfter(after: bigint, limit: number): Promise<Change[]>;
  /** The newest committed position (0 when the log is empty): where a subscriber without a resume point starts. */
  head(): Promise<bigint>;
  /**
   * The lowest position the log still holds (older ones were pruned after the retention), or
   * head + 1 when it holds none: resuming after anything below `oldest - 1` gets a reset.
   */
  oldest(): Promise<bigint>;
  /**
   * Calls `listener` (possibly spuriously, possibly coalesced) once changes may have committed,
   * through this instance or, on PostgreSQL, any other (LISTEN/NOTIFY). A lost wake-up delays an
   * event until the next one or the feed's periodic poll; it never loses it. Returns an unsubscribe.
   */
  onChange(listener: () => void): () => void;
}
