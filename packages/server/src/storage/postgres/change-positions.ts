/**
 * How a change gets its position on PostgreSQL, so that positions follow commit order across every
 * instance on the database.
 *
 * The trap: a sequence value taken early in a transaction. Two writers take 9 and 10, the one
 * holding 10 commits first, a reader sees 10 and a subscriber resuming after it never gets 9.
 * Here a writer takes its positions under one transaction-scoped advisory lock (CHANGE_LOCK), as
 * the last thing its transaction does before it commits; PostgreSQL releases the lock only after
 * the commit is flushed and visible. So the next writer takes a higher position only once every
 * lower one is visible (or rolled back, leaving a gap that is never filled: the sequence never goes
 * back), and a reader needs nothing special: whatever position it sees, every lower one that will
 * ever exist is already visible in its snapshot.
 *
 * The other way, readers stopping below the oldest position still in flight, needs to know which
 * positions are in flight: the transaction ids of a snapshot do not say (a transaction that got its
 * xid first may take its position last), and publishing them costs a write per transaction. The
 * lock costs the creation path its cross-transaction flush grouping (commits that hold positions
 * follow each other; measured in bench/README.md, "The change log"), which group commit mostly
 * makes up for with larger batches.
 *
 * Rules for every statement that takes it: the lock comes after every row lock the transaction
 * needs (plants inserted, updated, deleted), so a holder never waits for anything but its commit
 * and two writers cannot deadlock; and the NOTIFY rides in the same transaction, so it is sent
 * exactly when the change commits (PostgreSQL serialises notifying commits anyway, under the same
 * order).
 */

// Any fixed int8 other than the migration lock (postgres/migrations.ts): advisory locks share one space.
const CHANGE_LOCK = "31640567245199463";

/** The channel every instance LISTENs on (postgres/change-notifications.ts); the payload is empty. */
export const CHANGE_CHANNEL = "plantstore_changes";

/** The lock and the wake-up, as a select list: evaluate it once the transaction's row locks are taken. */
export const TAKE_POSITIONS = `pg_advisory_xact_lock(${CHANGE_LOCK}), pg_notify('${CHANGE_CHANNEL}', '')`;

/**
 * A plant's event JSON built by PostgreSQL, byte for byte what `newPlantPayload` builds (a test
 * compares them on hostile names): `to_json(text)` escapes exactly as `JSON.stringify` does for
 * text PostgreSQL can hold, and int8 prints exact. Built here, the batch insert sends no payloads.
 */
export function plantJsonSql(id: string, name: string, tag: string): string {
  return `'{"id":' || ${id} || ',"name":' || to_json(${name})::text || CASE WHEN ${tag} IS NULL THEN '' ELSE ',"tag":' || to_json(${tag})::text END || '}'`;
}
