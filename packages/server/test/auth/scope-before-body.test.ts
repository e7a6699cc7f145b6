import { eventually } from "@plantstore/test-support/eventually";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { expectErrorShape, startTestServer, type TestServer, TOKEN } from "../support/harness.ts";
import { openRaw, type RawAnswer } from "../support/raw-socket.ts";
import { databaseUrlOf, issueToken } from "../support/token-helpers.ts";

const BODY_LIMIT = 1024;
const PLANT_ID = 4242;
const INSUFFICIENT_SCOPE = 'Bearer realm="plantstore", error="insufficient_scope", scope="plants:write"';

let server: TestServer;
/** A token that may read plants but not write them. */
let reader: string;
beforeAll(async () => {
  server = await startTestServer({ bodyLimitBytes: BODY_LIMIT });
  ({ token: reader } = await issueToken(databaseUrlOf(server), { scopes: ["plants:read"] }));
  expect((await server.createRaw(`{"id":${PLANT_ID},"name":"Kept","tag":"indoor"}`)).status).toBe(200);
});
afterAll(async () => {
  await server.close();
});

/** Every operation that writes, with the media type its body is read in. */
const WRITES = [
  { method: "POST", path: "/plants", contractPath: "/plants", mediaType: "application/json" },
  { method: "PUT", path: `/plants/${PLANT_ID}`, contractPath: "/plants/{id}", mediaType: "application/json" },
  {
    method: "PATCH",
    path: `/plants/${PLANT_ID}`,
    contractPath: "/plants/{id}",
    mediaType: "application/merge-patch+json",
  },
  { method: "DELETE", path: `/plants/${PLANT_ID}`, contractPath: "/plants/{id}", mediaType: "application/json" },
] as const;

/** Bodies each refused with 400, 413 or 415 when the token may write. */
const BAD_BODIES = [
  { what: "in the wrong media type", contentType: "text/plain", body: '{"name":"x"}' },
  { what: "that is not JSON", contentType: undefined, body: "{" },
  { what: "over the body limit", contentType: undefined, body: `{"name":"${"x".repeat(20 * 1024)}"}` },
] as const;

const cases = WRITES.flatMap((write) => BAD_BODIES.map((bad) => ({ ...write, ...bad })));

async function expectPlantKept(): Promise<void> {
  expect(await server.store.get(BigInt(PLANT_ID))).toEqual({ id: BigInt(PLANT_ID), name: "Kept", tag: "indoor" });
}

describe("a write with a token that lacks plants:write", () => {
  it.each(cases)("$method $contractPath with a body $what answers 403 (40300), not the body's error", async (c) => {
    const response = await server.send({
      method: c.method,
      path: c.path,
      contractPath: c.contractPath,
      headers: {
        authorization: `Bearer ${reader}`,
        "content-type": c.contentType ?? c.mediaType,
        "if-match": "*",
        // Said explicitly: Node's client frames no body of a DELETE by itself.
        "content-length": String(Buffer.byteLength(c.body)),
      },
      body: c.body,
    });
    expectErrorShape(response, 403, 40300);
    expect(response.headers["www-authenticate"]).toBe(INSUFFICIENT_SCOPE);
    await expectPlantKept();
  });

  it.each(WRITES)(
    "$method $contractPath with Expect: 100-continue answers 403 without a 100 Continue, and reads no body",
    async (write) => {
      const client = await openRaw(server.port);
      client.write(
        [
          `${write.method} ${write.path} HTTP/1.1`,
          "Host: plantstore",
          `Authorization: Bearer ${reader}`,
          `Content-Type: ${write.mediaType}`,
          "If-Match: *",
          "Expect: 100-continue",
          "Content-Length: 20",
          "",
          "",
        ].join("\r\n"),
      );
      await eventually(() => client.answers().some((a: RawAnswer) => a.status >= 200), {
        what: () => `a final answer to the head alone (${JSON.stringify(client.received())})`,
        timeoutMs: 5_000,
      });
      expect(client.received()).not.toMatch(/^HTTP\/1\.1 100/);
      const [answer, ...rest] = client.answers();
      expect(rest).toEqual([]);
      expectErrorShape({ ...answer!, json: JSON.parse(answer!.body), text: answer!.body }, 403, 40300);
      // Answered before its body came: the connection is not kept to read it.
      expect(answer!.headers["connection"]).toBe("close");
      await client.closed;
      await expectPlantKept();
    },
  );

  it("still gets the body's own error with a token that may write (the scope check is all that moved)", async () => {
    const response = await server.send({
      method: "PATCH",
      path: `/plants/${PLANT_ID}`,
      contractPath: "/plants/{id}",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "text/plain", "if-match": "*" },
      body: "{",
    });
    expectErrorShape(response, 415, 41500);
  });
});
