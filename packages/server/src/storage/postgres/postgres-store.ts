import type { NewPlant } from "@plantstore/schema";
import type { Pool, PoolClient, QueryResultRow } from "pg";

import type { Change, ChangeLog } from "../../changes/change-log.ts";
import {
  DEFAULT_POSTGRES_BREAKER,
  PostgresBreaker,
  type PostgresBreakerSettings,
} from "../../resilience/postgres-breaker.ts";
import { CHANGE_COLUMNS, changeFromRow, type ChangeRetention, logBounds, type StoredChange } from "../change-rows.ts";
import { type CommittedBatch, GroupCommit } from "../group-commit.ts";
import { migrationStatus } from "../migrations.ts";
import { ETAG_SECRET_NAME, newETagSecret, PlantETags } from "../plant-etag.ts";
import { patchedRow, plantFromRow, type PlantRow, plantRow, samePlant } from "../plant-rows.ts";
import type {
  CreateOutcome,
  DeleteOutcome,
  IfMatch,
  ListedPlant,
  ListOptions,
  MigrationStatus,
  PlantChange,
  PlantStore,
  PreconditionFailed,
  WriteOutcome,
} from "../plant-store.ts";
import {
  deletedPlantData,
  eventEnvelope,
  newMessageId,
  newPlantPayload,
  type WebhookEventType,
} from "../webhook-event.ts";
import type { AttemptRecord, ClaimedDelivery, WebhookQueue } from "../webhook-queue.ts";
import type { WriteHealth } from "../write-health.ts";
import { bigintArrayLiteral, textArrayLiteral } from "./array-literal.ts";
import { ChangeNotifications } from "./change-notifications.ts";
import { plantJsonSql, TAKE_POSITIONS } from "./change-positions.ts";
import { migratePostgres } from "./migrations.ts";
import {
  asStoreError,
  createPostgresPool,
  inTransaction,
  isBrokenConnection,
  type PostgresSettings,
  query,
} from "./pool.ts";
import { storeSecret } from "./store-secrets.ts";
import { PostgresWebhookQueue } from "./webhook-queue.ts";

export type PostgresStoreOptions = PostgresSettings & {
  /** Most creations one statement carries; the rest wait for the next one. */
  maxBatchSize?: number;
  /** Batches in flight at once, each on its own connection. */
  maxBatchesInFlight?: number;
  /** Called after every committed batch of creations, for metrics. */
  onCommit?: (batchSize: number, commitMs: number) => void;
  /** Apply pending migrations before serving (default true). */
  migrate?: boolean;
  /** The circuit breaker every statement of this store goes through (DEFAULT_POSTGRES_BREAKER). */
  breaker?: Partial<PostgresBreakerSettings>;
  /** Told how each batch of creations went, for readiness. */
  writeHealth?: WriteHealth | undefined;
};

type Stored = { name: string; tag: string | null };

/** One of the ANNOUNCING statements with its name (prepared per connection), its event and its own values ($6 on). */
type AnnouncingWrite = { statement: string; name: string; type: WebhookEventType; data: string; values: unknown[] };

/**
 * One statement writes a batch of plants and, for those that are new, their changes (the change
 * log), outbox events and one delivery per active subscriber of new plants: atomic without an
 * explicit transaction, one round trip. `ON CONFLICT DO NOTHING` lets the primary key decide; an
 * insert that meets a concurrent, uncommitted insert of the same id waits for it to commit or roll
 * back, so two instances can never both create one id.
 *
 * The changes take their positions under the change lock (./change-positions.ts) only once every
 * plant of the batch is written (`positioned` counts `inserted` first), so the lock is held for
 * the rest of this statement and its commit, never while waiting on a row. Each change's data is
 * built here from the row (plantJsonSql), and its webhook events carry that same text and its
 * position: one change, one JSON, for the feed and the webhooks alike.
 *
 * Subscribers added without event types (`events` NULL) get the bare plant JSON, as before event
 * types existed; those that chose plant.created get it in a Standard Webhooks envelope, built here
 * from the same JSON ($6 is the change's time in RFC 3339), under a message id of its own.
 *
 * The events' message ids ($4) are only built when the last batch saw an active subscriber of new
 * plants: without subscribers they cost more client CPU than the rest of the batch. A batch sent
 * without them that finds a subscriber after all (one was added meanwhile) stores nothing (`go` is
 * false) and says so (`subscribed`), and is sent again with them. Whether there are subscribers is
 * read once, in the statement's snapshot, exactly as when they are always sent.
 */
const INSERT_BATCH = `
  WITH input AS (
    SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY
      AS t(id, name, tag, message_id, ord)
  ), subscribers AS (
    SELECT id, events IS NULL AS bare FROM webhook_subscribers
    WHERE active AND (events IS NULL OR 'plant.created' = ANY (events))
  ), go AS (
    SELECT $4::text[] IS NOT NULL OR NOT EXISTS (SELECT 1 FROM subscribers) AS ok
  ), inserted AS (
    INSERT INTO plants (id, name, tag) SELECT id, name, tag FROM input WHERE (SELECT ok FROM go)
    ON CONFLICT (id) DO NOTHING
    RETURNING id
  ), positioned AS (
    SELECT ${TAKE_POSITIONS} FROM (SELECT count(*) AS n FROM inserted) AS written WHERE n > 0
  ), changes AS (
    INSERT INTO plant_changes (position, kind, plant_id, data, tag, previous_tag, at)
    SELECT nextval('plant_changes_position'), 'plant.created', id, ${plantJsonSql("id", "name", "tag")}, tag, NULL, $5
    FROM input JOIN inserted USING (id)
    WHERE EXISTS (SELECT FROM positioned)
    ORDER BY ord
    RETURNING position, plant_id, data
  ), events AS (
    INSERT INTO webhook_events (message_id, type, payload, created_at, change_position)
    SELECT input.message_id, NULL, changes.data, $5::bigint, changes.position
    FROM changes JOIN input ON input.id = changes.plant_id
    WHERE EXISTS (SELECT 1 FROM subscribers WHERE bare)
    UNION ALL
    SELECT 'msg_' || replace(gen_random_uuid()::text, '-', ''), 'plant.created',
           '{"type":"plant.created","timestamp":"' || $6::text || '","data":' || changes.data || '}', $5::bigint,
           changes.position
    FROM changes
    WHERE EXISTS (SELECT 1 FROM subscribers WHERE NOT bare)
    RETURNING id, type
  ), deliveries AS (
    INSERT INTO webhook_deliveries (event_id, subscriber_id, status, next_attempt_at, updated_at)
    SELECT events.id, subscribers.id, 'pending', $5, $5 FROM events JOIN subscribers ON (events.type IS NULL) = subscribers.bare
  )
  SELECT id, NULL::bigint AS events, NULL::boolean AS subscribed FROM inserted
  UNION ALL
  SELECT NULL, (SELECT count(*) FROM events), EXISTS (SELECT 1 FROM subscribers)`;

/**
/**
 * Prunes from the oldest position up to the first change still within the retention (or, when
 * none is, up to the newest, which stays): a walk of the primary key over what it deletes only.
 */
const PRUNE_CHANGES = `
  DELETE FROM plant_changes WHERE position IN (
    SELECT position FROM plant_changes
    WHERE position < coalesce(
      (SELECT position FROM plant_changes WHERE at >= $1 ORDER BY position LIMIT 1),
      (SELECT max(position) FROM plant_changes))
    ORDER BY position LIMIT $2)`;

/**
 * A change of a plant ($6 on; it returns the plant's id, its tag after and before) in one
 * statement, so one commit, with its change ($1 kind, $5 data, $4 time; its position taken once
 * the row is written, see ./change-positions.ts) and, when someone chose its event type, the
 * event (message id $2, payload $3: an envelope of the same data) carrying the change's position,
 * and its deliveries.
 */
const ANNOUNCING = (change: string) => `
  WITH changed AS (${change}), positioned AS (
    SELECT ${TAKE_POSITIONS} FROM changed
  ), changes AS (
    INSERT INTO plant_changes (position, kind, plant_id, data, tag, previous_tag, at)
    SELECT nextval('plant_changes_position'), $1, changed.id, $5, changed.tag, changed.previous_tag, $4
    FROM changed, positioned
    RETURNING position
  ), subscribers AS (
    SELECT id FROM webhook_subscribers WHERE active AND $1::text = ANY (events)
  ), events AS (
    INSERT INTO webhook_events (message_id, type, payload, created_at, change_position)
    SELECT $2, $1, $3, $4, changes.position FROM changes WHERE EXISTS (SELECT 1 FROM subscribers)
    RETURNING id
  ), deliveries AS (
    INSERT INTO webhook_deliveries (event_id, subscriber_id, status, next_attempt_at, updated_at)
    SELECT events.id, subscribers.id, 'pending', $4, $4 FROM events CROSS JOIN subscribers
  )
  SELECT (SELECT count(*) FROM changed) AS changed, (SELECT count(*) FROM events) AS events`;

/**
 * A compare-and-set: the row is changed only if it still holds what the precondition was checked
 * against. The tag is a digest of exactly these fields, so "same content" is "same ETag", and
 * under READ COMMITTED an UPDATE that waited for a concurrent writer's row lock evaluates its
 * WHERE again on the row that writer committed: of writers holding one ETag, exactly one matches,
 * on every instance. The change is recorded in the same statement, its position taken once the
 * row is written (./change-positions.ts).
 */
const UPDATE_IF_UNCHANGED = ANNOUNCING(`
  UPDATE plants SET name = $9, tag = $10
  WHERE id = $6 AND name = $7 AND tag IS NOT DISTINCT FROM $8
  RETURNING id, tag, $8::text AS previous_tag`);

/** The same compare-and-set for a conditional delete. */
const DELETE_IF_UNCHANGED = ANNOUNCING(
  "DELETE FROM plants WHERE id = $6 AND name = $7 AND tag IS NOT DISTINCT FROM $8 RETURNING id, NULL::text AS tag, tag AS previous_tag",
);

const DELETE = ANNOUNCING("DELETE FROM plants WHERE id = $6 RETURNING id, NULL::text AS tag, tag AS previous_tag");

// A plant can be deleted and created again by others between our two statements; a handful of
// rounds always settles that in practice, and a bound keeps a pathological case from spinning.
const MAX_SETTLE_ROUNDS = 8;

/**
 * PostgreSQL backend, for many stateless instances on one database.
 *
 * Creations go through the shared group commit (../group-commit.ts): they queue while earlier
 * batches are in flight, then go as one multi-row statement (one round trip, one commit, one WAL
 * flush with `synchronous_commit=on`). Up to `maxBatchesInFlight` batches run at once on separate
 * connections.
 */
export class PostgresStore implements PlantStore, WebhookQueue, ChangeLog, ChangeRetention {
  readonly #pool: Pool;
  readonly #breaker: PostgresBreaker;
  readonly #webhooks: PostgresWebhookQueue;
  readonly #creations: GroupCommit<PlantRow, CreateOutcome>;
  readonly #eventListeners: Array<() => void> = [];
  readonly #notifications: ChangeNotifications;
  #etags: Promise<PlantETags> | undefined;
  // Whether the last batch found an active subscriber: the next one then carries its events.
  #subscribersSeen = true;

  private constructor(pool: Pool, options: PostgresStoreOptions) {
    this.#pool = pool;
    this.#notifications = new ChangeNotifications(options);
    const breaker = { ...DEFAULT_POSTGRES_BREAKER, ...options.breaker };
    this.#breaker = new PostgresBreaker(options, {
      ...breaker,
      onStateChange: (state, reason) => {
        if (state === "open") {
          const error = this.#breaker.openError();
          // Creations queued behind batches that hang on the silent database go at once: none was sent.
          this.#creations.failQueued(error);
          // Readiness says so at once, and stays 503 until a write or its probe succeeds again.
          options.writeHealth?.fail(error);
        }
        // The database answers again: the listening connection may have died silently meanwhile.
        if (state === "closed") this.#notifications.reconnect();
        breaker.onStateChange?.(state, reason);
      },
    });
    this.#webhooks = new PostgresWebhookQueue(pool);
    this.#creations = new GroupCommit({
      commit: (plants) => this.#commit(plants),
      maxBatchSize: options.maxBatchSize ?? 512,
      maxBatchesInFlight: options.maxBatchesInFlight ?? Math.max(1, Math.min(4, options.poolSize - 1)),
      // PostgreSQL spends ~170 µs of CPU per statement and ~5 µs per row (batches of 1, 8 and 32
      // measured 180, 31 and 11 µs per creation): a second statement for a handful of creations
      // costs more than it saves. At 32 connections groups grew from ~9 to ~15 creations, and the
      // database's CPU per creation fell from ~27-33 to ~19 µs at the same req/s (bench/README.md).
      minOverlappingBatch: 16,
      onCommit: options.onCommit,
      health: options.writeHealth,
    });
  }

  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    if (options.migrate ?? true) await migratePostgres(options);
    return new PostgresStore(createPostgresPool(options), options);
  }

  async etag(plant: NewPlant): Promise<string> {
    return (await this.#plantETags()).of(plant);
  }

  /**
   * The ETag secret, read (or first added) when a tag is first needed and kept from then on. It is
   * a statement like any other: while the database cannot be reached it fails like one, and the
   * next call tries again.
   */
  #plantETags(): Promise<PlantETags> {
    this.#etags ??= this.#breaker
      .call(() => storeSecret(this.#pool, ETAG_SECRET_NAME, newETagSecret))
      .then(
        (secret) => new PlantETags(secret),
        (error: unknown) => {
          this.#etags = undefined;
          throw error;
        },
      );
    return this.#etags;
  }

  /** The pool, for other tables of the service that live in the same database. */
  get pool(): Pool {
    return this.#pool;
  }

  create(plant: NewPlant): Promise<CreateOutcome> {
    // Not even queued while the circuit is open: batches hung on the silent database may hold
    // every slot, and a queued creation would wait for their timeouts.
    if (this.#breaker.state === "open") return Promise.reject(this.#breaker.openError());
    return this.#creations.submit(plantRow(plant));
  }

  async #commit(plants: PlantRow[]): Promise<CommittedBatch<CreateOutcome>> {
    const started = performance.now();
    let stored: Map<bigint, Stored & { created: boolean }>;
    try {
      // A batch still running when the circuit opens is answered with the open circuit's error (see PostgresBreaker.call).
      stored = await this.#breaker.call(() => this.#settle(plants));
    } catch (error) {
      // Whether the batch committed is unknown (or it did not): every caller gets a StoreError.
      throw asStoreError(error);
    }
    const commitMs = performance.now() - started;
    // The first request for an id in this batch is the one that created it; later ones compare.
    const claimed = new Set<bigint>();
    const results = plants.map((plant): CreateOutcome => {
      const result = stored.get(plant.id)!;
      const first = !claimed.has(plant.id);
      claimed.add(plant.id);
      if (result.created && first) return "created";
      return samePlant(result, plant) ? "replayed" : "conflict";
    });
    return { results, commitMs };
  }

  /**
   * Inserts what is new and reads back what was already there, until every id of the batch has
   * a committed row to compare with. The read is a separate statement on purpose: under READ
   * COMMITTED it takes a fresh snapshot, so it sees a row whose concurrent insert our INSERT
   * waited for (one statement would still see its older snapshot, without that row).
   */
  async #settle(plants: PlantRow[]): Promise<Map<bigint, Stored & { created: boolean }>> {
    const result = new Map<bigint, Stored & { created: boolean }>();
    const firsts = new Map<bigint, PlantRow>();
    for (const plant of plants) if (!firsts.has(plant.id)) firsts.set(plant.id, plant);
    let pending = [...firsts.values()];
    for (let round = 0; pending.length > 0; round++) {
      if (round >= MAX_SETTLE_ROUNDS)
        throw new Error("could not settle a batch: its ids kept being deleted and created");
      const created = await this.#insert(pending);
      for (const plant of pending)
        if (created.has(plant.id)) result.set(plant.id, { name: plant.name, tag: plant.tag, created: true });
      const existing = pending.filter((p) => !created.has(p.id));
      if (existing.length === 0) break;
      const rows = await this.#withRetry(() =>
        query<PlantRow>(
          this.#pool,
          "SELECT id, name, tag FROM plants WHERE id = ANY($1::bigint[])",
          [existing.map((p) => p.id)],
          "plants_existing",
        ),
      );
      for (const row of rows) result.set(row.id, { name: row.name, tag: row.tag, created: false });
      // Gone again in between (deleted by someone else): try to insert those once more.
      pending = existing.filter((p) => !result.has(p.id));
    }
    return result;
  }

  async #insert(plants: PlantRow[]): Promise<Set<bigint>> {
    const withEvents = this.#subscribersSeen;
    const now = Date.now();
    const rows = await this.#withRetry(() =>
      query<{ id: bigint | null; events: bigint | null; subscribed: boolean | null }>(
        this.#pool,
        INSERT_BATCH,
        [
          bigintArrayLiteral(plants.map((p) => p.id)),
          textArrayLiteral(plants.map((p) => p.name)),
          textArrayLiteral(plants.map((p) => p.tag)),
          withEvents ? textArrayLiteral(plants.map(() => newMessageId())) : null,
          now,
          new Date(now).toISOString(),
        ],
        "plants_insert_batch",
      ),
    );
    const created = new Set<bigint>();
    let events = 0n;
    let subscribed = false;
    for (const row of rows) {
      if (row.id !== null) created.add(row.id);
      else {
        events += row.events ?? 0n;
        subscribed = row.subscribed === true;
      }
    }
    this.#subscribersSeen = subscribed;
    // Sent without events but a subscriber was there: nothing was stored; again, with them.
    if (subscribed && !withEvents) return this.#insert(plants);
    if (events > 0n) for (const listener of this.#eventListeners) listener();
    if (created.size > 0) this.#notifications.wake();
    return created;
  }

  /**
   * Once more on a fresh connection when a pooled one turns out to have been dropped by the
   * server (a restart, pg_terminate_backend). Only for statements safe to repeat: a repeated
   * insert of a plant that did commit is a replay, and reads are reads.
   */
  async #withRetry<T>(work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (error) {
      const cause = error instanceof Error && error.cause !== undefined ? error.cause : error;
      if (!isBrokenConnection(cause) || this.#creations.closed) throw error;
      return work();
    }
  }

  update(id: bigint, change: PlantChange, ifMatch: IfMatch, ifNoneMatch?: IfMatch): Promise<WriteOutcome> {
    return this.#rewrite(id, ifMatch, ifNoneMatch, (row) => patchedRow(row, change), { outcome: "not_found" });
  }

  async replace(
    plant: NewPlant,
    precondition: { ifMatch: IfMatch; ifNoneMatch?: IfMatch | undefined } | { ifNoneMatch: "*" },
  ): Promise<WriteOutcome> {
    // A free id fails If-Match (RFC 9110 §13.1.1): nothing is there to match.
    if ("ifMatch" in precondition)
      return this.#rewrite(plant.id, precondition.ifMatch, precondition.ifNoneMatch, () => plantRow(plant), {
        outcome: "precondition_failed",
        current: undefined,
      });
    for (let round = 0; round < MAX_SETTLE_ROUNDS; round++) {
      // Through the group commit, like a POST: the primary key decides who creates the id.
      if ((await this.create(plant)) === "created") return { outcome: "written", plant, created: true };
      const current = await this.get(plant.id);
      if (current !== undefined) return { outcome: "precondition_failed", current };
      // Deleted again since it was found taken: try once more.
    }
    throw new Error("could not settle a replace: its id kept being created and deleted");
  }

  /**
   * Reads the plant, checks `ifMatch` and `ifNoneMatch` against it, and writes `wanted(row)` in one
   * compare-and-set (UPDATE_IF_UNCHANGED): the check and the write are one atomic step, in two
   * round trips and without a transaction held open between them.
   */
  #rewrite(
    id: bigint,
    ifMatch: IfMatch,
    ifNoneMatch: IfMatch | undefined,
    wanted: (row: PlantRow) => PlantRow,
    missing: WriteOutcome,
  ): Promise<WriteOutcome> {
    return this.#conditionally(id, ifMatch, ifNoneMatch, missing, (row) => {
      const next = wanted(row);
      // A change that changes nothing writes nothing, and announces nothing.
      if (samePlant(row, next)) return { outcome: { outcome: "written", plant: plantFromRow(row), created: false } };
      return {
        outcome: { outcome: "written", plant: plantFromRow(next), created: false },
        write: {
          statement: UPDATE_IF_UNCHANGED,
          name: "plants_update",
          type: "plant.updated",
          data: newPlantPayload(next),
          values: [id, row.name, row.tag, next.name, next.tag],
        },
      };
    });
  }

  async delete(id: bigint, ifMatch?: IfMatch, ifNoneMatch?: IfMatch): Promise<DeleteOutcome | PreconditionFailed> {
    this.#refuseWhenClosed();
    const data = deletedPlantData(id);
    // `*` holds for any stored plant: an unconditional delete (a missing plant is not_found either way).
    if ((ifMatch === undefined || ifMatch === "*") && ifNoneMatch === undefined) {
      const write = { statement: DELETE, name: "plants_delete", type: "plant.deleted" as const, data, values: [id] };
      const written = await this.#breaker.call(() => this.#announcing(this.#pool, write));
      return this.#announced(written, written.changed ? "deleted" : "not_found");
    }
    const outcome = await this.#conditionally(id, ifMatch ?? "*", ifNoneMatch, { outcome: "not_found" }, (row) => ({
      outcome: { outcome: "written", plant: plantFromRow(row), created: false },
      write: {
        statement: DELETE_IF_UNCHANGED,
        name: "plants_delete_if_unchanged",
        type: "plant.deleted",
        data,
        values: [id, row.name, row.tag],
      },
    }));
    if (outcome.outcome === "written") return "deleted";
    return outcome.outcome === "not_found" ? "not_found" : outcome;
  }

  async changesAfter(after: bigint, limit: number): Promise<Change[]> {
    this.#refuseWhenClosed();
    const rows = await this.#read<StoredChange>(
      "changes_after",
      `SELECT ${CHANGE_COLUMNS} FROM plant_changes WHERE position > $1 ORDER BY position LIMIT $2`,
      [after, limit],
    );
    return rows.map(changeFromRow);
  }

  async head(): Promise<bigint> {
    this.#refuseWhenClosed();
    const [row] = await this.#read<{ head: bigint | null }>(
      "changes_head",
      "SELECT max(position) AS head FROM plant_changes",
    );
    return row?.head ?? 0n;
  }

  async oldest(): Promise<bigint> {
    this.#refuseWhenClosed();
    const [row] = await this.#read<{ lowest: bigint | null; highest: bigint | null }>(
      "changes_bounds",
      "SELECT min(position) AS lowest, max(position) AS highest FROM plant_changes",
    );
    return logBounds(row?.lowest ?? null, row?.highest ?? null).oldest;
  }

  onChange(listener: () => void): () => void {
    return this.#notifications.subscribe(listener);
  }

  async pruneChanges(before: number, limit: number): Promise<number> {
    this.#refuseWhenClosed();
    const result = await this.#breaker.call(async () => {
      try {
        return await this.#pool.query(PRUNE_CHANGES, [before, limit]);
      } catch (error) {
        throw asStoreError(error);
      }
    });
    return result.rowCount ?? 0;
  }

  /** A read of the change log, prepared once per connection, through the breaker. */
  #read<R extends QueryResultRow>(name: string, text: string, values: unknown[] = []): Promise<R[]> {
    return this.#breaker.call(() => this.#withRetry(() => query<R>(this.#pool, text, values, name)));
  }

  /**
   * A conditional write: read, check `ifMatch` and `ifNoneMatch`, then `plan`'s compare-and-set,
   * which writes only if the row is still what was read. When someone else wrote in between and
   * the precondition may still hold (`*`, a list of several tags, an If-None-Match), it is done
   * again under the row's lock (`SELECT … FOR UPDATE` in one transaction), so writers racing on
   * one plant cannot starve one another through failed compare-and-sets. Every statement goes
   * through the breaker.
   */
  async #conditionally(
    id: bigint,
    ifMatch: IfMatch,
    ifNoneMatch: IfMatch | undefined,
    missing: WriteOutcome,
    plan: (row: PlantRow) => { outcome: WriteOutcome; write?: AnnouncingWrite },
  ): Promise<WriteOutcome> {
    type Plan = { outcome: WriteOutcome; write?: AnnouncingWrite };
    const etags = await this.#plantETags();
    const decide = (row: PlantRow | undefined): Plan => {
      if (row === undefined) return { outcome: missing };
      const current = plantFromRow(row);
      if (!etags.holds(ifMatch, current) || !etags.holdsNone(ifNoneMatch, current)) {
        return { outcome: { outcome: "precondition_failed", current } };
      }
      return plan(row);
    };
    const optimistic = decide(await this.#row(id));
    const write = optimistic.write;
    if (write === undefined) return optimistic.outcome;
    const written = await this.#breaker.call(() => this.#announcing(this.#pool, write));
    if (written.changed) return this.#announced(written, optimistic.outcome);
    const locked = await this.#breaker.call(() =>
      inTransaction(this.#pool, async (client) => {
        const { rows } = await client.query<PlantRow>("SELECT id, name, tag FROM plants WHERE id = $1 FOR UPDATE", [
          id,
        ]);
        const decided = decide(rows[0]);
        if (decided.write === undefined) return { decided, written: { changed: false, events: false } };
        return { decided, written: await this.#announcing(client, decided.write) };
      }),
    );
    // Announced only once committed: the dispatcher would otherwise look before the event is there.
    return this.#announced(locked.written, locked.decided.outcome);
  }

  /** Wakes the dispatcher for new events and the feed for a new change, once the write committed. */
  #announced<T>(written: { changed: boolean; events: boolean }, outcome: T): T {
    if (written.events) for (const listener of this.#eventListeners) listener();
    if (written.changed) this.#notifications.wake();
    return outcome;
  }

  /**
   * One ANNOUNCING statement: whether it changed a row and wrote an event. Never repeated on a
   * broken connection (#withRetry): whether it committed would be unknown, and a repeated
   * compare-and-set would fail on its own write.
   */
  async #announcing(
    db: Pool | PoolClient,
    { statement, name, type, data, values }: AnnouncingWrite,
  ): Promise<{ changed: boolean; events: boolean }> {
    const now = Date.now();
    let rows: Array<{ changed: bigint; events: bigint }>;
    try {
      ({ rows } = await db.query<{ changed: bigint; events: bigint }>({
        name,
        text: statement,
        values: [type, newMessageId(), eventEnvelope(type, now, data), now, data, ...values],
      }));
    } catch (error) {
      throw asStoreError(error);
    }
    return { changed: (rows[0]?.changed ?? 0n) > 0n, events: (rows[0]?.events ?? 0n) > 0n };
  }

  async get(id: bigint): Promise<NewPlant | undefined> {
    const row = await this.#row(id);
    return row === undefined ? undefined : plantFromRow(row);
  }

  async #row(id: bigint): Promise<PlantRow | undefined> {
    this.#refuseWhenClosed();
    const rows = await this.#breaker.call(() =>
      this.#withRetry(() =>
        query<PlantRow>(this.#pool, "SELECT id, name, tag FROM plants WHERE id = $1", [id], "plants_get"),
      ),
    );
    return rows[0];
  }

  async list({ limit, after, tag }: ListOptions): Promise<ListedPlant[]> {
    this.#refuseWhenClosed();
    // Four plain statements rather than `($1 IS NULL OR …)`, so each one is planned for its index.
    const [name, text, values] =
      tag === undefined
        ? after === undefined
          ? ["plants_list", "SELECT id, name, tag FROM plants ORDER BY id LIMIT $1", [limit]]
          : ["plants_list_after", "SELECT id, name, tag FROM plants WHERE id > $1 ORDER BY id LIMIT $2", [after, limit]]
        : after === undefined
          ? ["plants_list_tag", "SELECT id, name, tag FROM plants WHERE tag = $1 ORDER BY id LIMIT $2", [tag, limit]]
          : [
              "plants_list_tag_after",
              "SELECT id, name, tag FROM plants WHERE tag = $1 AND id > $2 ORDER BY id LIMIT $3",
              [tag, after, limit],
            ];
    const rows = await this.#breaker.call(() => this.#withRetry(() => query<PlantRow>(this.#pool, text, values, name)));
    return rows.map(plantFromRow);
  }

  async ping(): Promise<void> {
    this.#refuseWhenClosed();
    await this.#breaker.call(() => query(this.#pool, "SELECT 1"));
  }

  /**
   * A one-row write (the write_probe table) that first takes the lock every write of a plant takes,
   * without waiting for it (`NOWAIT`): proves writes commit, for readiness after a failed write.
   * A `LOCK TABLE plants IN ACCESS EXCLUSIVE MODE` held elsewhere fails it at once as busy, so an
   * instance stays out of rotation while its writes would wait on that lock, and comes back as soon
   * as it is released. Row locks on single ids are not seen, nor should they be: they hold up those
   * ids only. Through the breaker: while the circuit is open it fails at once.
   */
  async probeWrite(): Promise<void> {
    this.#refuseWhenClosed();
    await this.#breaker.call(() =>
      inTransaction(this.#pool, async (client) => {
        await client.query("LOCK TABLE plants IN ROW EXCLUSIVE MODE NOWAIT");
        await client.query(
          "INSERT INTO write_probe (id, probed_at) VALUES (1, $1) ON CONFLICT (id) DO UPDATE SET probed_at = excluded.probed_at",
          [Date.now()],
        );
      }),
    );
  }

  async migrations(): Promise<MigrationStatus> {
    this.#refuseWhenClosed();
    const [row] = await this.#breaker.call(() =>
      query<{ n: bigint }>(this.#pool, "SELECT count(*) AS n FROM schema_migrations"),
    );
    return migrationStatus(row?.n ?? 0);
  }

  hasDueDeliveries(now: number): Promise<boolean> {
    return this.#breaker.call(() => this.#webhooks.hasDueDeliveries(now));
  }

  claimDeliveries(options: { now: number; leaseUntil: number; limit: number }): Promise<ClaimedDelivery[]> {
    return this.#breaker.call(() => this.#webhooks.claimDeliveries(options));
  }

  recordAttempt(attempt: AttemptRecord): Promise<void> {
    return this.#breaker.call(() => this.#webhooks.recordAttempt(attempt));
  }

  webhookBacklog(): Promise<number> {
    return this.#breaker.call(() => this.#webhooks.webhookBacklog());
  }

  onEvents(listener: () => void): void {
    this.#eventListeners.push(listener);
  }

  #refuseWhenClosed(): void {
    if (this.#creations.closed) throw new Error("the store is closed");
  }

  /** Commits what is queued, then closes every connection. */
  async close(): Promise<void> {
    if (this.#creations.closed) return;
    await this.#creations.close();
    this.#notifications.close();
    this.#breaker.dispose();
    await this.#pool.end();
  }
}
