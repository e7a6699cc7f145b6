/**
 * A `text/event-stream` parser that follows the WHATWG HTML "Interpreting an event stream" rules
 * (https://html.spec.whatwg.org/multipage/server-sent-events.html#event-stream-interpretation),
 * fed decoded text in chunks of any size: a line, or a CRLF, may be split across two chunks.
 */

/** One dispatched event: `type` is `message` when the stream named none. */
export type ServerSentEvent = { type: string; data: string; lastEventId: string };

export type EventStreamItem =
  | { kind: "event"; event: ServerSentEvent }
  /** A valid `retry:` field: the server's reconnection time in milliseconds. */
  | { kind: "retry"; milliseconds: number }
  /**
   * A blank line that ended a block with an `id:` field but no data: no event is dispatched, but
   * the stream said where it stands (a server opens a stream with one, saying where it starts).
   */
  | { kind: "id"; lastEventId: string };

export type EventStreamParser = {
  /** Parses the next piece of the stream and returns what it completed, in stream order. */
  push(text: string): EventStreamItem[];
  /**
   * The ID of the last event dispatched (the spec's "last event ID string"): what a reconnection
   * sends as `Last-Event-ID`. An `id:` of an event the stream cut off before its blank line does
   * not count, or a reconnection would skip that event.
   */
  readonly lastEventId: string;
};

const DIGITS = /^\d+$/;

/**
 * `lastEventId` is the ID a previous connection ended with: the spec keeps it across
 * reconnections, so an event without an `id:` field still carries it.
 */
export function createEventStreamParser(lastEventId = ""): EventStreamParser {
  let pending = "";
  // A CR ended the previous chunk: an LF that starts the next one belongs to the same line ending.
  let skipLeadingLf = false;
  let data = "";
  let hasData = false;
  let eventType = "";
  /** Whether the block being read had an `id:` field. */
  let blockHasId = false;
  let idBuffer = lastEventId;
  let dispatchedId = lastEventId;
  let atStart = true;

  const processLine = (line: string, out: EventStreamItem[]) => {
    if (line === "") {
      // Dispatch. An event without data is dropped, but its id counts.
      dispatchedId = idBuffer;
      if (hasData) {
        out.push({
          kind: "event",
          event: { type: eventType === "" ? "message" : eventType, data, lastEventId: idBuffer },
        });
      } else if (blockHasId) {
        out.push({ kind: "id", lastEventId: idBuffer });
      }
      blockHasId = false;
      data = "";
      hasData = false;
      eventType = "";
      return;
    }
    if (line.startsWith(":")) return; // a comment: heartbeats, padding
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "event":
        eventType = value;
        break;
      case "data":
        // Lines are joined with LF; the spec's trailing LF is never added, so nothing is removed.
        data = hasData ? `${data}\n${value}` : value;
        hasData = true;
        break;
      case "id":
        if (!value.includes("\u0000")) {
          idBuffer = value;
          blockHasId = true;
        }
        break;
      case "retry":
        if (DIGITS.test(value)) out.push({ kind: "retry", milliseconds: Number(value) });
        break;
      default:
        // Unknown fields are ignored, as the spec says.
        break;
    }
  };

  return {
    push(text) {
      const out: EventStreamItem[] = [];
      let start = 0;
      // One leading byte order mark is ignored (a TextDecoder has usually removed it already).
      if (atStart && text.length > 0) {
        atStart = false;
        if (text.startsWith("\uFEFF")) start = 1;
      }
      if (skipLeadingLf && text.length > 0) {
        if (text.startsWith("\n")) start = 1;
        skipLeadingLf = false;
      }
      for (let i = start; i < text.length; i++) {
        const c = text.charCodeAt(i);
        if (c !== 0x0a && c !== 0x0d) continue;
        processLine(pending + text.slice(start, i), out);
        pending = "";
        if (c === 0x0d) {
          if (i + 1 === text.length) skipLeadingLf = true;
          else if (text.charCodeAt(i + 1) === 0x0a) i++;
        }
        start = i + 1;
      }
      pending += text.slice(start);
      return out;
    },
    get lastEventId() {
      return dispatchedId;
    },
  };
}
