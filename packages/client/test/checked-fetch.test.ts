import { checkedFetch, takeViolations } from "@plantstore/test-support/checked-fetch";
import { type StandInServer, startStandInServer } from "@plantstore/test-support/stand-in-server";
import { TEST_TOKEN as TOKEN } from "@plantstore/test-support/test-config";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { createPlantStoreClient, PlantStoreProtocolError } from "../src/index.ts";

/** A stand-in server that serves the seed as its document and answers POST /plants with `answer`. */
let stand: StandInServer;
let url: string;
let answer: { status: number; body: string } = { status: 200, body: "{}" };
beforeAll(async () => {
  stand = await startStandInServer(() => ({ ...answer, type: "application/json" }));
  url = stand.url;
});
afterAll(async () => {
  await stand.close();
});

describe("checkedFetch, the fetch the client tests give every client of a real server", () => {
  it("records an answer off the interface even when the client turns it into an error a test might expect", async () => {
    // A well-formed Error, but with a status the served document does not declare for POST /plants.
    answer = { status: 418, body: '{"error":41800,"message":"teapot"}' };
    const client = createPlantStoreClient({ baseUrl: url, token: TOKEN, fetch: checkedFetch });
    await expect(client.createPlant({ id: 1, name: "x" })).rejects.toBeInstanceOf(PlantStoreProtocolError);
    // Taken here so that this file's afterEach, which fails any test that left one, passes.
    const seen = takeViolations().map(String);
    expect(seen).toEqual([
      expect.stringMatching(
        /served http:\/\/127\.0\.0\.1:\d+\/openapi\.json: POST \/plants answered 418, which the document does not declare/,
      ),
    ]);
  });

  it("records a 200 whose body is not a Plant", async () => {
    answer = { status: 200, body: '{"name":7}' };
    const client = createPlantStoreClient({ baseUrl: url, token: TOKEN, fetch: checkedFetch });
    await expect(client.createPlant({ id: 1, name: "x" })).rejects.toBeInstanceOf(PlantStoreProtocolError);
    expect(takeViolations().map(String)).toEqual([
      expect.stringMatching(/seed openapi\.json: POST \/plants 200 body \{"name":7\} fails/),
    ]);
  });

  it("passes a conforming answer through untouched", async () => {
    answer = { status: 200, body: '{"name":"x"}' };
    const client = createPlantStoreClient({ baseUrl: url, token: TOKEN, fetch: checkedFetch });
    await expect(client.createPlant({ id: 1, name: "x" })).resolves.toEqual({ name: "x" });
    expect(takeViolations()).toEqual([]);
  });
});
