import { describe, expect, it } from "vitest";

import { expectErrorShape, startTestServer, TOKEN } from "../support/harness.ts";

describe("POST /plants when storage fails unexpectedly", () => {
  it("answers 500 (50000) with a generic message and keeps serving from the same store", async () => {
    await using server = await startTestServer();
    expect((await server.createRaw('{"id":1,"name":"before"}')).status).toBe(200);
    // An administrator's trigger makes every insert fail inside the driver with an error that is
    // not about the storage (no disk, lock or I/O code): nothing the server expects.
    await server.database.exec(
      "CREATE TRIGGER refuse_plants BEFORE INSERT ON plants BEGIN SELECT RAISE(ABORT, 'refused by a trigger'); END",
    );
    const response = await server.createRaw('{"id":2,"name":"during"}');
    expectErrorShape(response, 500, 50000);
    expect((response.json as { message: string }).message).toBe("internal server error");
    expect(response.text).not.toMatch(/sqlite|database|trigger|Error:|at /i);

    // The process lives and its store still answers: a read, then a create once inserts work again.
    const auth = { authorization: `Bearer ${TOKEN}` };
    const read = await server.send({ method: "GET", path: "/plants/1", headers: auth, contractPath: "/plants/{id}" });
    expect(read.status).toBe(200);
    expect(read.json).toEqual({ id: 1, name: "before" });
    await server.database.exec("DROP TRIGGER refuse_plants");
    expect((await server.createRaw('{"id":2,"name":"after"}')).status).toBe(200);
    expect(await server.database.row(2n)).toEqual({ id: 2n, name: "after", tag: null });
  });
});
