import { type ErrorCodeName, NEW_PLANT_EXAMPLE, PlantEvent, TAG_MAX_LENGTH } from "@plantstore/schema";

import { AUTH_ERRORS, RATE_LIMIT_HEADERS, REQUEST_ERRORS, SERVER_ERRORS } from "../operation-docs.ts";
import { PLANT_EVENTS_PATH } from "./plant-events.ts";
import { changeFrames, positionFrame, RETRY_FRAME, RETRY_MS } from "./sse-frames.ts";

type Json = Record<string, unknown>;

const POSITION = { type: "string", pattern: "^(?:0|[1-9][0-9]*)$", maxLength: 19 } as const;

const DESCRIPTION = [
  "Streams every committed change to the plants as [server-sent events](https://html.spec.whatwg.org/multipage/server-sent-events.html) (`text/event-stream`), in commit order, never missing or repeating one across reconnects and instances. The stream does not end by itself.",
  "",
  `First comes \`retry: ${RETRY_MS}\` (the reconnection delay), then one event per change:`,
  "",
  "```",
  "id: 1042",
  "event: plant.created",
  `data: {"id":${NEW_PLANT_EXAMPLE.id},"name":"${NEW_PLANT_EXAMPLE.name}","tag":"${NEW_PLANT_EXAMPLE.tag}"}`,
  "```",
  "",
  '`event` is `plant.created`, `plant.updated` or `plant.deleted`; `data` is the plant as its webhook carries it (a deletion: `{"id":…}`), with ids as exact JSON integers (parse them losslessly); `id` is the change\'s position in one store-wide, strictly increasing sequence. A comment line `: heartbeat` comes at least every 15 s (`PLANTSTORE_EVENTS_HEARTBEAT_MS`).',
  "",
  "**Resuming.** Send the last `id` received as `Last-Event-ID` (or `?after=`; the header wins): the stream starts with the change right after it. Without either, it starts with the changes committed after the connection. Every stream opens with an `id:` line and no event (where it starts), which sets the client's last event id, so a client that loses the connection before its first event resumes from there; a `tag` stream gets such a line for the changes it does not show, so its resume point keeps up with the log. A position older than the change log's retention (or above its head) gets one `reset` event instead of a gap: re-list the plants, then keep its `id` as the resume point.",
  "",
  "**Closing.** The server ends a stream after a whole event when its client falls behind by more than `PLANTSTORE_EVENTS_BUFFER_LIMIT` bytes, when its token is revoked or expires (within `PLANTSTORE_EVENTS_AUTH_CHECK_MS` plus 1 s), and on shutdown: reconnect with `Last-Event-ID`. A reconnect with a token no longer valid is answered 401. Each stream holds a connection (`PLANTSTORE_MAX_CONNECTIONS`) and counts one request against the token's rate limit when it opens.",
  "",
  "**Limits.** A token may hold at most `PLANTSTORE_EVENTS_MAX_PER_TOKEN` open streams on an instance (32 by default) and a client address `PLANTSTORE_EVENTS_MAX_PER_ADDRESS` (256); past either, 429 (`42901`) with `Retry-After`. All streams together may hold `PLANTSTORE_EVENTS_CONNECTION_SHARE` percent of the instance's connections (80); past it, 503 (`50306`) with `Retry-After`, so that ordinary requests always find a connection.",
  "",
  "**In a browser.** The browser's `EventSource` cannot subscribe: it cannot send the `Authorization` header, so it is answered 401 and gives up for good (and a token never belongs in a URL). Read the stream with `fetch`, which sends the header, and parse it as SSE: `@plantstore/client`'s `watchPlants` does so, in browsers and Node alike, and reconnects with `Last-Event-ID`.",
  "",
  "**The body** is the stream's text, read as it arrives: a client that waits for the whole body waits until the stream ends. Each event, once parsed (its `id`, `event`, and `data` parsed as JSON), is a `PlantEvent` (`x-itemSchema`, as OpenAPI 3.2 names a streamed item's schema).",
].join("\n");

/** A stream's text as it starts: the retry hint, where it starts, then two changes. */
const EXAMPLE_STREAM =
  RETRY_FRAME +
  positionFrame(1041n) +
  changeFrames(
    (
      [
        { kind: "plant.created", data: JSON.stringify(NEW_PLANT_EXAMPLE) },
        { kind: "plant.deleted", data: JSON.stringify({ id: NEW_PLANT_EXAMPLE.id }) },
      ] as const
    ).map((change, i) => ({
      ...change,
      position: 1042n + BigInt(i),
      plantId: BigInt(NEW_PLANT_EXAMPLE.id),
      tag: null,
      previousTag: null,
      at: new Date(0),
    })),
  );

/** Everything the stream's failures can be, before it starts: afterwards a failure only ends it. */
const ERRORS: readonly ErrorCodeName[] = [
  "INVALID_PARAMETER",
  ...AUTH_ERRORS,
  "TOO_MANY_STREAMS",
  ...REQUEST_ERRORS,
  ...SERVER_ERRORS,
  "STREAMS_FULL",
];

/**
 * `GET /plants/events` as the document shows it. trpc-to-openapi cannot describe it (a procedure
 * answers once, with JSON), so the document adds it: its parameters, the `Last-Event-ID` header,
 * the `text/event-stream` answer and the event schemas (from @plantstore/schema).
 */
export const PLANT_EVENTS_OPERATION = {
  path: PLANT_EVENTS_PATH,
  errors: ERRORS,
  eventSchema: PlantEvent,
  operation: (eventSchema: Json): Json => ({
    operationId: "watchPlants",
    summary: "Watch plant changes",
    description: DESCRIPTION,
    tags: ["plants"],
    parameters: [
      {
        name: "Last-Event-ID",
        in: "header",
        required: false,
        description:
          "The `id` of the last event received: the stream resumes right after it. Wins over `after`. Malformed: 400 (`40005`).",
        schema: { ...POSITION, examples: ["1041"] },
        example: "1041",
      },
      {
        name: "after",
        in: "query",
        required: false,
        description:
          "Resume from a stored position without the header: the same as `Last-Event-ID` (which wins when both are sent), " +
          "for a client that keeps the last `id` itself but cannot send `Last-Event-ID`, e.g. through an HTTP library that drops it.",
        schema: { ...POSITION, examples: ["1041"] },
        example: "1041",
      },
      {
        name: "tag",
        in: "query",
        required: false,
        description:
          "Only changes of plants with this tag before or after the change (so a plant leaving the tag is seen leaving).",
        schema: { type: "string", minLength: 1, maxLength: TAG_MAX_LENGTH, examples: [NEW_PLANT_EXAMPLE.tag] },
        example: NEW_PLANT_EXAMPLE.tag,
      },
    ],
    responses: {
      "200": {
        description: "The stream of events, until the client or the server closes it",
        headers: {
          "Cache-Control": { description: "`no-store`: no cache may keep events.", schema: { type: "string" } },
          ...RATE_LIMIT_HEADERS,
        },
        content: {
          // A string, so generated clients type the body as the text it is. OpenAPI 3.1 has no
          // streamed-items schema: the events' schema sits beside it as 3.2's `itemSchema` would, and
          // the string's `contentSchema` (JSON Schema's, an annotation) says what its text decodes to.
          "text/event-stream": {
            schema: {
              type: "string",
              description:
                "Server-sent events (`text/event-stream`), in stream order and without end; each event, parsed, is a `PlantEvent`.",
              contentMediaType: "text/event-stream",
              contentSchema: { type: "array", items: eventSchema },
            },
            "x-itemSchema": eventSchema,
            example: EXAMPLE_STREAM,
          },
        },
      },
    },
    security: [{ bearerAuth: ["plants:read"] }],
  }),
};
