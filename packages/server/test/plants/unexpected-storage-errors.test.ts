import { describe, expect, it } from "vitest";

import { expectErrorShape, startTestServer, TOKEN } from "../support/harness.ts";

describe("POST /plants when storage fails unexpectedly", () => {
  it("answers 500 (50000) with a generic message and keeps serving", async () => {
    await using server = await startTestServer();
    // Close the real database under the running app: the next insert throws inside the driver.
    await server.store.close();
    const response = await server.createRaw('{"id":1,"name":"a"}');
    expectErrorShape(response, 500, 50000);
    expect((response.json as { message: string }).message).toBe("internal server error");
    expect(response.text).not.toMatch(/sqlite|database|Error:|at /i);
    const health = await server.send({ method: "GET", path: "/healthz" });
    expect(health.status).toBe(200);
    expect(TOKEN).toBeTruthy();
  });
});
