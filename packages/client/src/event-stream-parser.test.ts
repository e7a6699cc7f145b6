import { describe, expect, it } from "vitest";

import { createEventStreamParser, type EventStreamItem } from "./event-stream-parser.ts";

/** Everything the parser completes from `chunks`, fed one after another to one parser. */
function parse(chunks: readonly string[], lastEventId?: string) {
  const parser = createEventStreamParser(lastEventId);
  const items: EventStreamItem[] = chunks.flatMap((chunk) => parser.push(chunk));
  return { items, lastEventId: parser.lastEventId };
}

const event = (type: string, data: string, lastEventId = "") => ({
  kind: "event",
  event: { type, data, lastEventId },
});

describe("the event stream parser (WHATWG rules)", () => {
  it("dispatches an event with its id, type and data at the blank line", () => {
    expect(parse(['id: 7\nevent: plant.created\ndata: {"id":1}\n\n'])).toEqual({
      items: [event("plant.created", '{"id":1}', "7")],
      lastEventId: "7",
    });
  });

  it("names an event without `event:` message, and forgets the type after each dispatch", () => {
    expect(parse(["event: reset\ndata: a\n\ndata: b\n\n"]).items).toEqual([event("reset", "a"), event("message", "b")]);
  });

  it("joins several data lines with LF, keeping empty ones", () => {
    expect(parse(["data: one\ndata:\ndata: three\n\n"]).items).toEqual([event("message", "one\n\nthree")]);
  });

  it("dispatches a data line with an empty value as an empty event, and a field name alone as an empty value", () => {
    expect(parse(["data:\n\ndata\n\n"]).items).toEqual([event("message", ""), event("message", "")]);
  });

  it.each([
    ["LF", "\n"],
    ["CRLF", "\r\n"],
    ["CR", "\r"],
  ])("splits lines on %s", (_name, eol) => {
    const text = ["id: 1", "data: a", "data: b", "", "id: 2", "data: c", "", ""].join(eol);
    expect(parse([text]).items).toEqual([event("message", "a\nb", "1"), event("message", "c", "2")]);
  });

  it("splits lines on a mix of CRLF, LF and CR in one stream", () => {
    expect(parse(["data: a\r\ndata: b\rdata: c\n\r\ndata: d\r\r"]).items).toEqual([
      event("message", "a\nb\nc"),
      event("message", "d"),
    ]);
  });

  it("reads a CRLF split between two chunks as one line ending, not as an extra blank line", () => {
    // Were the LF a line of its own, "a" would be dispatched alone.
    expect(parse(["data: a\r", "\ndata: b\r", "\n\r", "\n"]).items).toEqual([event("message", "a\nb")]);
  });

  it("gives the same events however the stream is cut into chunks", () => {
    const text =
      '\uFEFFretry: 2000\r\n: heartbeat\r\nid: 41\r\nevent: plant.created\r\ndata: {"id":1,\r\ndata: "name":"é🌿"}\r\n\r\n' +
      'id: 42\revent: plant.deleted\rdata: {"id":1}\r\r: bye\nid: 43\nevent: reset\ndata: x\n\n';
    const whole = parse([text]);
    expect(whole.items).toEqual([
      { kind: "retry", milliseconds: 2000 },
      event("plant.created", '{"id":1,\n"name":"é🌿"}', "41"),
      event("plant.deleted", '{"id":1}', "42"),
      event("reset", "x", "43"),
    ]);
    for (let cut = 0; cut <= text.length; cut++) {
      expect(parse([text.slice(0, cut), text.slice(cut)]), `cut at ${cut}`).toEqual(whole);
    }
    expect(parse([...text])).toEqual(whole);
  });

  it("ignores comments, heartbeats included, and unknown fields", () => {
    expect(parse([": heartbeat\n:\nfoo: bar\ndata: x\n: inside\n\n"]).items).toEqual([event("message", "x")]);
  });

  it("removes one space after the colon, and only one", () => {
    expect(parse(["data:x\n\ndata:  x\n\nevent:plant.updated\ndata: \n\n"]).items).toEqual([
      event("message", "x"),
      event("message", " x"),
      event("plant.updated", ""),
    ]);
  });

  it("takes `retry:` only when it is all ASCII digits", () => {
    expect(parse(["retry: 1500\nretry: 1.5\nretry: 12a\nretry:\nretry: -1\nretry: 0\n"]).items).toEqual([
      { kind: "retry", milliseconds: 1500 },
      { kind: "retry", milliseconds: 0 },
    ]);
  });

  it("keeps the last id for the events after it, until an `id:` changes or empties it", () => {
    expect(parse(["id: 5\ndata: a\n\ndata: b\n\nid\ndata: c\n\n"]).items).toEqual([
      event("message", "a", "5"),
      event("message", "b", "5"),
      event("message", "c", ""),
    ]);
  });

  it("ignores an id that contains U+0000", () => {
    expect(parse(["id: 5\ndata: a\n\nid: 6\u00007\ndata: b\n\n"]).items).toEqual([
      event("message", "a", "5"),
      event("message", "b", "5"),
    ]);
  });

  it("starts from the id a previous connection ended with", () => {
    expect(parse(["data: a\n\n"], "9")).toEqual({ items: [event("message", "a", "9")], lastEventId: "9" });
  });

  it("does not dispatch an event without data, but its id counts", () => {
    expect(parse(["id: 12\nevent: plant.created\n\n"], "3")).toEqual({
      items: [{ kind: "id", lastEventId: "12" }],
      lastEventId: "12",
    });
  });

  it("reports a block with an id and no data as where the stream stands, even the id it already had", () => {
    // A server opens a resumed stream with the id it resumes after: the same id, yet news that it opened.
    expect(parse(["retry: 2000\n\nid: 9\n\n: heartbeat\n\n\n"], "9")).toEqual({
      items: [
        { kind: "retry", milliseconds: 2000 },
        { kind: "id", lastEventId: "9" },
      ],
      lastEventId: "9",
    });
    // A blank line alone, or a block whose id was ignored, says nothing.
    expect(parse(["\n\nid: 1\u00002\n\n"]).items).toEqual([]);
  });

  it("does not count the id of an event the stream cut off before its blank line", () => {
    // Resuming after 8 would lose event 8: the id is only the resume point once its event is complete.
    expect(parse(["id: 7\ndata: a\n\nid: 8\ndata: b\n"])).toEqual({
      items: [event("message", "a", "7")],
      lastEventId: "7",
    });
  });

  it("ignores one byte order mark at the start of the stream only", () => {
    expect(parse(["\uFEFFdata: a\n\n\uFEFFdata: b\n\n"]).items).toEqual([event("message", "a")]);
    expect(parse(["", "\uFEFF", "data: a\n\n"]).items).toEqual([event("message", "a")]);
  });
});
