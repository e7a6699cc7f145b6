import { describe, expect, it } from "vitest";

import {
  createPlantStoreClient,
  PlantStoreError,
  PlantStoreProtocolError,
  PlantStoreRateLimitError,
  PlantStoreUnauthorizedError,
  type Reconnect,
  type StreamOpen,
  type WatchPlantsEvent,
} from "../src/index.ts";

/**
 * What the server's own tests cannot show: how the client reads answers the real server does not
 * give on cue (a proxy's 502, a 429 with Retry-After, an event type from a newer server, a
 * malformed event). Each request is answered by the next of `answers`; the real server's side is
 * in watch-plants.test.ts.
 */
function scripted(answers: ReadonlyArray<() => Response | Promise<Response>>) {
  const requests: Request[] = [];
  const reconnects: Reconnect[] = [];
  const client = createPlantStoreClient({
    baseUrl: "https://plants.example/api/",
    token: "abc.DEF-123",
    fetch: async (input, init) => {
      requests.push(new Request(input, init));
      const answer = answers[requests.length - 1];
      if (answer === undefined) throw new Error(`unexpected request #${requests.length}`);
      return answer();
    },
  });
  return { client, requests, reconnects, onReconnect: (r: Reconnect) => reconnects.push(r) };
}

const stream =
  (text: string, contentType = "text/event-stream; charset=utf-8") =>
  () =>
    new Response(text, { status: 200, headers: { "content-type": contentType } });
const errorBody =
  (status: number, error: number, headers: Record<string, string> = {}) =>
  () =>
    new Response(JSON.stringify({ error, message: `refused with ${status}` }), {
      status,
      headers: { "content-type": "application/json", ...headers },
    });
/** Ends the iteration: a 401 is final. */
const final = errorBody(401, 40101);

async function drain(events: AsyncIterable<WatchPlantsEvent>): Promise<WatchPlantsEvent[]> {
  const seen: WatchPlantsEvent[] = [];
  for await (const event of events) seen.push(event);
  return seen;
}

/** Runs the watch to its end, which `final` makes a PlantStoreUnauthorizedError; the events before it. */
async function watchUntilFinal(events: AsyncIterable<WatchPlantsEvent>): Promise<WatchPlantsEvent[]> {
  const seen: WatchPlantsEvent[] = [];
  const run = (async () => {
    for await (const event of events) seen.push(event);
  })();
  await expect(run).rejects.toBeInstanceOf(PlantStoreUnauthorizedError);
  return seen;
}

describe("watchPlants' requests", () => {
  it("sends GET <baseUrl>/plants/events with the tag, the bearer token and Accept: text/event-stream", async () => {
    const { client, requests } = scripted([final]);
    await expect(drain(client.watchPlants({ tag: "a b" }))).rejects.toBeInstanceOf(PlantStoreUnauthorizedError);
    expect(requests.map((r) => `${r.method} ${r.url}`)).toEqual([
      "GET https://plants.example/api/plants/events?tag=a+b",
    ]);
    expect(requests[0]!.headers.get("authorization")).toBe("Bearer abc.DEF-123");
    expect(requests[0]!.headers.get("accept")).toBe("text/event-stream");
    expect(requests[0]!.headers.get("last-event-id")).toBeNull();
  });

  it("sends `after` as Last-Event-ID, exactly", async () => {
    const { client, requests } = scripted([final]);
    await expect(drain(client.watchPlants({ after: 9223372036854775807n }))).rejects.toThrow();
    expect(requests[0]!.headers.get("last-event-id")).toBe("9223372036854775807");
    expect(requests[0]!.url).toBe("https://plants.example/api/plants/events");
  });
});

describe("watchPlants reading the stream", () => {
  it("skips an event type it does not know, yet resumes after its id", async () => {
    const { client, requests, onReconnect } = scripted([
      stream(
        'id: 1\nevent: plant.moved\ndata: {}\n\nid: 2\nevent: plant.deleted\ndata: {"id":5}\n\nid: 3\nevent: plant.moved\ndata: {}\n\n',
      ),
      final,
    ]);
    const seen = await watchUntilFinal(client.watchPlants({ maxReconnectDelayMs: 1, onReconnect }));
    expect(seen).toEqual([{ type: "plant.deleted", position: 2n, id: 5n }]);
    expect(requests[1]!.headers.get("last-event-id")).toBe("3");
  });

  it("resumes after the id of an event without data, and waits the stream's retry: hint", async () => {
    const { client, requests, reconnects, onReconnect } = scripted([
      stream("retry: 40\nid: 10\n\n: heartbeat\n\n"),
      final,
    ]);
    await watchUntilFinal(client.watchPlants({ onReconnect }));
    expect(requests[1]!.headers.get("last-event-id")).toBe("10");
    expect(reconnects).toHaveLength(1);
    expect(reconnects[0]).toMatchObject({ attempt: 1, after: 10n });
    expect(reconnects[0]!.delayMs).toBeGreaterThanOrEqual(40);
    expect(reconnects[0]!.delayMs).toBeLessThanOrEqual(60);
    expect(reconnects[0]!.cause).toBeInstanceOf(PlantStoreProtocolError);
    expect(reconnects[0]!.cause.message).toMatch(/ended the event stream/);
  });

  it("doubles the wait while attempts fail, and starts over once a connection opened", async () => {
    const refuse = () => Promise.reject(new TypeError("fetch failed"));
    const { client, reconnects, onReconnect } = scripted([
      stream("retry: 10\n\n"),
      refuse,
      refuse,
      stream(""),
      refuse,
      final,
    ]);
    await watchUntilFinal(client.watchPlants({ onReconnect }));
    expect(reconnects.map((r) => r.attempt)).toEqual([1, 2, 3, 1, 2]);
    // The hint of 10 ms, doubled per failed attempt, each plus up to half again.
    const delays = reconnects.map((r) => r.delayMs);
    for (const [i, low] of [10, 20, 40, 10, 20].entries()) {
      expect(delays[i]).toBeGreaterThanOrEqual(low);
      expect(delays[i]).toBeLessThanOrEqual(low * 1.5);
    }
    expect(reconnects[1]!.cause).toBeInstanceOf(PlantStoreProtocolError);
    expect(reconnects[1]!.cause.message).toMatch(/fetch failed/);
  });

  it("calls onOpen at the first event of a stream that does not open with an id, and not for one that says nothing", async () => {
    const opens: StreamOpen[] = [];
    const { client, onReconnect } = scripted([
      stream("retry: 10\n\n: heartbeat\n\n"),
      stream('retry: 10\n\nid: 6\nevent: plant.deleted\ndata: {"id":5}\n\n'),
      final,
    ]);
    const seen = await watchUntilFinal(client.watchPlants({ onReconnect, onOpen: (open) => opens.push(open) }));
    expect(seen).toEqual([{ type: "plant.deleted", position: 6n, id: 5n }]);
    // The first connection never said where it started, so the second resumed from nothing.
    expect(opens).toEqual([{ connection: 2, start: "fresh", position: 6n }]);
  });

  it.each([
    ["data that is not JSON", "id: 1\nevent: plant.created\ndata: {nope\n\n", /not JSON/],
    ["a plant without a name", 'id: 1\nevent: plant.created\ndata: {"id":1}\n\n', /not what the interface says/],
    ["an id in quotes", 'id: 1\nevent: plant.deleted\ndata: {"id":"1"}\n\n', /not what the interface says/],
    ["a plant event without a position", 'event: plant.created\ndata: {"id":1,"name":"x"}\n\n', /without a position/],
  ])("ends with PlantStoreProtocolError for %s, without retrying", async (_label, text, message) => {
    const { client, requests, onReconnect } = scripted([stream(text)]);
    const watching = drain(client.watchPlants({ onReconnect }));
    await expect(watching).rejects.toBeInstanceOf(PlantStoreProtocolError);
    await expect(watching).rejects.toThrow(message);
    expect(requests).toHaveLength(1);
  });

  it("ends with PlantStoreProtocolError for a 200 that is not an event stream", async () => {
    const { client, requests } = scripted([stream("[]", "application/json")]);
    await expect(drain(client.watchPlants())).rejects.toThrow(/expected a text\/event-stream/);
    expect(requests).toHaveLength(1);
  });
});

describe("watchPlants on error statuses", () => {
  it("retries a 429 no sooner than its Retry-After, with the rate-limit error as the cause", async () => {
    const controller = new AbortController();
    const reconnects: Reconnect[] = [];
    const { client } = scripted([errorBody(429, 42900, { "retry-after": "7" })]);
    const seen = await drain(
      client.watchPlants({
        signal: controller.signal,
        maxReconnectDelayMs: 1,
        onReconnect: (r) => {
          reconnects.push(r);
          // Stop rather than wait the 7 s: the delay it chose is what this checks.
          controller.abort();
        },
      }),
    );
    expect(seen).toEqual([]);
    expect(reconnects).toHaveLength(1);
    expect(reconnects[0]!.delayMs).toBe(7000);
    expect(reconnects[0]!.cause).toBeInstanceOf(PlantStoreRateLimitError);
  });

  it("retries a 503 Error body and a proxy's HTML 502, then reads the stream", async () => {
    const { client, reconnects, onReconnect } = scripted([
      errorBody(503, 50301),
      () => new Response("<html>Bad Gateway</html>", { status: 502, headers: { "content-type": "text/html" } }),
      stream('id: 4\nevent: plant.created\ndata: {"id":9007199254740993,"name":"Fern"}\n\n'),
      final,
    ]);
    const seen = await watchUntilFinal(client.watchPlants({ maxReconnectDelayMs: 1, onReconnect }));
    expect(seen).toEqual([{ type: "plant.created", position: 4n, plant: { id: 9007199254740993n, name: "Fern" } }]);
    expect(reconnects[0]!.cause).toBeInstanceOf(PlantStoreError);
    expect(reconnects[0]!.cause).toMatchObject({ status: 503, code: 50301 });
    expect(reconnects[1]!.cause).toBeInstanceOf(PlantStoreProtocolError);
    expect(reconnects[1]!.cause).toMatchObject({ status: 502 });
  });

  it.each([
    [400, 40005],
    [404, 40400],
  ])("ends with PlantStoreError for a %i, without retrying", async (status, code) => {
    const { client, requests } = scripted([errorBody(status, code)]);
    const watching = drain(client.watchPlants());
    await expect(watching).rejects.toBeInstanceOf(PlantStoreError);
    await expect(watching).rejects.toMatchObject({ status, code });
    expect(requests).toHaveLength(1);
  });
});
