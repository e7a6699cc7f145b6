import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { startTestServer, type TestServer, TOKEN } from "../support/harness.ts";

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(async () => {
  await server.close();
});

const auth = { authorization: `Bearer ${TOKEN}` };

describe("50 concurrent PATCHes carrying the same ETag", () => {
  it("answer exactly one 200 and 49 × 412, and the stored plant is the winner's", async () => {
    expect((await server.createRaw('{"id":26,"name":"Contested","tag":"start"}')).status).toBe(200);
    const read = () => server.send({ method: "GET", path: "/plants/26", contractPath: "/plants/{id}", headers: auth });
    const etag = (await read()).headers["etag"] as string;

    const answers = await Promise.all(
      Array.from({ length: 50 }, (_, i) =>
        server.send({
          method: "PATCH",
          path: "/plants/26",
          contractPath: "/plants/{id}",
          headers: { ...auth, "content-type": "application/merge-patch+json", "if-match": etag },
          body: JSON.stringify({ name: `writer ${i}`, tag: `t${i}` }),
        }),
      ),
    );
    const winners = answers.filter((answer) => answer.status === 200);
    const refused = answers.filter((answer) => answer.status === 412);
    expect(answers.map((answer) => answer.status).sort()).toEqual([200, ...Array<number>(49).fill(412)]);
    const winner = winners[0]!;
    const stored = await read();
    expect(stored.text).toBe(winner.text);
    expect(stored.headers["etag"]).toBe(winner.headers["etag"]);
    // Every loser is told the tag the winner left.
    for (const answer of refused) expect(answer.headers["etag"]).toBe(winner.headers["etag"]);
  });
});
