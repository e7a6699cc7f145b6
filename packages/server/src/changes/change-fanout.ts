import { type Clock, systemClock } from "../clock.ts";
import type { Change, ChangeLog } from "./change-log.ts";

/** One subscriber of the feed: it is handed whole events, already written as text, in position order. */
export type FanoutSubscriber = {
  /** Only changes whose tag or previous tag is this one; every change when undefined. */
  readonly tag: string | undefined;
  /** Called with the text of one or more whole events, never an empty one. */
  write(text: string): void;
  /**
   * Settles once the subscriber can take more: a catch-up reads its next page only then, so a
   * client resuming far back is paced by what it takes, not cut off as a slow consumer.
   */
  drained?(): Promise<void>;
};

export type Subscription = {
  /** Settles once the subscriber caught up with the reader and gets its events from it; rejects when a catch-up read failed. */
  readonly live: Promise<void>;
  /** Stops delivery at once (idempotent). */
  close(): void;
};

export type StartingPoint = { after: bigint; reset: boolean };

export type ChangeFanoutOptions = {
  log: ChangeLog;
  /** The text of a run of changes, all of which the subscriber gets. */
  format: (changes: readonly Change[]) => string;
  /** The text that moves a filtered subscriber past changes it does not get. */
  formatPosition: (position: bigint) => string;
  /** How often the log is read without a wake-up: the safety net for a lost notification. */
  pollMs: number;
  /** Changes read at once. */
  pageSize?: number;
  /** Told of a failed read of the log; the next wake-up or poll reads again. */
  onReadError: (error: unknown) => void;
  clock?: Clock | undefined;
};

type Member = Required<FanoutSubscriber> & { sent: bigint; closed: boolean };

const PAGE_SIZE = 500;

const matches = (change: Change, tag: string | undefined) =>
  tag === undefined || change.tag === tag || change.previousTag === tag;

/**
 * One reader of the change log per instance, fanning out to every subscriber: however many
 * streams are open, each wake-up costs one read of the log, and each event is written as text once
 * per distinct (resume point, tag) among the subscribers, not once per subscriber.
 *
 * Never skipping: the reader asks for the changes after the last position it read, and the log
 * never returns a position while a lower one may still commit (change-log.ts). A subscriber whose
 * resume point is behind the reader catches up with reads of its own, then joins the reader in
 * the same tick as its last catch-up read is written, so no change falls between the two. Each
 * subscriber keeps the last position it was handed and is only ever handed later ones, so a change
 * the reader and a catch-up both read is never written twice.
 */
export class ChangeFanout {
  readonly #log: ChangeLog;
  readonly #format: (changes: readonly Change[]) => string;
  readonly #formatPosition: (position: bigint) => string;
  readonly #pageSize: number;
  readonly #onReadError: (error: unknown) => void;
  readonly #live = new Set<Member>();
  /** The last position the reader read; meaningful while anyone is live. */
  #cursor = 0n;
  /** Bumped when the cursor is moved back for a first subscriber, so a read from the old cursor is dropped. */
  #epoch = 0;
  #reading = false;
  #again = false;
  #stopped = false;
  readonly #stopWatching: () => void;
  readonly #stopPolling: () => void;

  constructor(options: ChangeFanoutOptions) {
    this.#log = options.log;
    this.#format = options.format;
    this.#formatPosition = options.formatPosition;
    this.#pageSize = options.pageSize ?? PAGE_SIZE;
    this.#onReadError = options.onReadError;
    const clock = options.clock ?? systemClock;
    this.#stopWatching = this.#log.onChange(() => this.#wake());
    let cancel = () => {};
    const arm = () => {
      cancel = clock.setTimer(() => {
        arm();
        this.#wake();
      }, options.pollMs);
    };
    arm();
    this.#stopPolling = () => cancel();
  }

  /** Subscribers the reader writes to now (not counting those still catching up). */
  get liveCount(): number {
    return this.#live.size;
  }

  /**
   * Where a stream resuming after `after` starts: there, when the log still holds what follows it;
   * else at the head, with a reset (older than the retention, or above the head). Without a resume
   * point, at the head: only what commits from now on.
   */
  async startingPoint(after: bigint | undefined): Promise<StartingPoint> {
    const head = await this.#log.head();
    if (after === undefined) return { after: head, reset: false };
    if (after > head) return { after: head, reset: true };
    const oldest = await this.#log.oldest();
    return after < oldest - 1n ? { after: head, reset: true } : { after, reset: false };
  }

  /** Hands `subscriber` every change after `after` that matches its tag, until closed. */
  subscribe(subscriber: FanoutSubscriber, after: bigint): Subscription {
    const member: Member = {
      tag: subscriber.tag,
      write: (text) => subscriber.write(text),
      drained: () => subscriber.drained?.() ?? Promise.resolve(),
      sent: after,
      closed: false,
    };
    const live = this.#catchUp(member);
    // The caller learns of a failed catch-up through `live`; nothing is left unhandled meanwhile.
    live.catch(() => undefined);
    return {
      live,
      close: () => {
        member.closed = true;
        this.#live.delete(member);
      },
    };
  }

  /** Stops reading; subscribers are closed by whoever opened them. */
  stop(): void {
    this.#stopped = true;
    this.#stopWatching();
    this.#stopPolling();
    this.#live.clear();
  }

  async #catchUp(member: Member): Promise<void> {
    while (!member.closed && !this.#stopped) {
      if (this.#live.size === 0) {
        // Nobody else is listening: the reader starts from this subscriber's point.
        this.#cursor = member.sent;
        this.#epoch++;
        this.#join(member);
        return;
      }
      if (member.sent >= this.#cursor) {
        this.#join(member);
        return;
      }
      await member.drained();
      if (member.closed) return;
      const page = await this.#log.changesAfter(member.sent, this.#pageSize);
      if (member.closed) return;
      this.#handTo(member, page, 0);
      // A log that holds nothing more below the reader's cursor (pruned meanwhile): join the reader.
      if (page.length === 0 && member.sent < this.#cursor) member.sent = this.#cursor;
    }
  }

  #join(member: Member): void {
    this.#live.add(member);
    this.#wake();
  }

  #wake(): void {
    if (this.#stopped || this.#live.size === 0) return;
    if (this.#reading) {
      this.#again = true;
      return;
    }
    void this.#read();
  }

  async #read(): Promise<void> {
    this.#reading = true;
    try {
      do {
        this.#again = false;
        const epoch = this.#epoch;
        const page = await this.#log.changesAfter(this.#cursor, this.#pageSize);
        if (this.#stopped) return;
        if (epoch !== this.#epoch) {
          this.#again = true;
          continue;
        }
        if (page.length > 0) {
          this.#cursor = page.at(-1)!.position;
          this.#deliver(page);
        }
        if (page.length === this.#pageSize) this.#again = true;
      } while (this.#again && this.#live.size > 0);
    } catch (error) {
      this.#onReadError(error);
    } finally {
      this.#reading = false;
    }
  }

  /** Every live subscriber gets what it has not had of `page`; the text is made once per (start, tag). */
  #deliver(page: readonly Change[]): void {
    const texts = new Map<string, string>();
    for (const member of this.#live) {
      const start = member.sent < page[0]!.position ? 0 : page.findIndex((change) => change.position > member.sent);
      if (start === -1) continue;
      this.#handTo(member, page, start, texts);
    }
  }

  #handTo(member: Member, page: readonly Change[], start: number, texts?: Map<string, string>): void {
    if (page.length === start) return;
    member.sent = page.at(-1)!.position;
    const key = `${start}\0${member.tag ?? ""}\0${member.tag === undefined ? "all" : "tag"}`;
    let text = texts?.get(key);
    if (text === undefined) {
      const run = page.slice(start).filter((change) => matches(change, member.tag));
      text = run.length === 0 ? "" : this.#format(run);
      texts?.set(key, text);
    }
    member.write(text === "" ? this.#formatPosition(member.sent) : text);
  }
}
