import { createPlantStoreClient, type PlantStoreClient } from "@plantstore/client";
import { INT64_MAX } from "@plantstore/schema";
import type { RunningServer } from "@plantstore/server";
import * as plantStoreServer from "@plantstore/server";
import { eventually } from "@plantstore/test-support/eventually";
import { type FaultProxy, startFaultProxy } from "@plantstore/test-support/fault-proxy";
import { type RealServer, startRealServer } from "@plantstore/test-support/real-server";
import { TEST_TOKEN as TOKEN } from "@plantstore/test-support/test-config";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { runCli } from "./run-cli.ts";
import { spawnCli } from "./spawn-cli.ts";

// The feed is a stream that never ends: not through run-cli's contract proxy, which answers once
// the whole body arrived. The client's own tests check the events against the interface.
let server: RealServer<RunningServer>;
let proxy: FaultProxy;
let writer: PlantStoreClient;
/** Through the proxy, whose connections a test can cut. */
let auth: string[];

beforeAll(async () => {
  server = await startRealServer(plantStoreServer);
  proxy = await startFaultProxy({ host: "127.0.0.1", port: Number(new URL(server.url).port) });
  writer = createPlantStoreClient({ baseUrl: server.url, token: TOKEN });
  auth = ["--url", `http://127.0.0.1:${proxy.port}`];
});
afterAll(async () => {
  await proxy?.close();
  await server?.close();
});

const env = () => ({ PLANTSTORE_TOKEN: TOKEN });

/** The position every change so far has reached: `--after` it shows only what follows. */
async function head(): Promise<bigint> {
  const controller = new AbortController();
  for await (const event of writer.watchPlants({ after: INT64_MAX, signal: controller.signal })) {
    controller.abort();
    if (event.type === "reset") return event.position;
  }
  throw new Error("no reset for a position above the head");
}

describe("plantstore plants watch", () => {
  it("prints one line per change until SIGINT, then exits 0 with nothing on stderr", async () => {
    const start = await head();
    await writer.createPlant({ id: 2n ** 53n + 1n, name: "Fern", tag: "fern" });
    await writer.createPlant({ id: -5n, name: "Line\nbreak" });
    await writer.deletePlant(-5n);
    await using cli = spawnCli(["plants", "watch", "--after", String(start), ...auth], env());
    const lines = await cli.lines(3);
    expect(lines).toEqual([
      `${start + 1n} created 9007199254740993: Fern (fern)`,
      `${start + 2n} created -5: Line\\u000abreak`,
      `${start + 3n} deleted -5`,
    ]);
    await writer.createPlant({ id: 7n, name: "Live" });
    await cli.lines(4);
    expect(await cli.stop("SIGINT")).toEqual({
      code: 0,
      stdout: `${lines.join("\n")}\n${start + 4n} created 7: Live\n`,
      stderr: "",
    });
  });

  it("prints one JSON object per line with --json, filtered by --tag, and exits 0 on SIGTERM too", async () => {
    const start = await head();
    await writer.createPlant({ id: INT64_MAX, name: "Basil", tag: "herb" });
    await writer.createPlant({ id: 30n, name: "Oak", tag: "tree" });
    await writer.deletePlant(INT64_MAX);
    await using cli = spawnCli(
      ["plants", "watch", "--json", "--tag", "herb", "--after", String(start), ...auth],
      env(),
    );
    expect(await cli.lines(2)).toEqual([
      `{"type":"plant.created","position":${start + 1n},"plant":{"id":9223372036854775807,"name":"Basil","tag":"herb"}}`,
      `{"type":"plant.deleted","position":${start + 3n},"id":9223372036854775807}`,
    ]);
    await expect(cli.stop("SIGTERM")).resolves.toMatchObject({ code: 0, stderr: "" });
  });

  it("resumes across a connection cut in the middle of a burst: every change once, in order, and says so on stderr", async () => {
    const start = await head();
    const ids = Array.from({ length: 300 }, (_, i) => 100_000n + BigInt(i));
    await using cli = spawnCli(["plants", "watch", "--json", "--after", String(start), ...auth], env());
    let created = 0;
    const writing = (async () => {
      for (const id of ids) {
        await writer.createPlant({ id, name: `p${id}` });
        created += 1;
      }
    })();
    await cli.lines(50);
    const createdAtCut = created;
    proxy.cut();
    await cli.stderrMatching(/reconnecting in \d+\.\d s, resuming after position \d+/);
    await writing;
    const lines = await cli.lines(ids.length);
    expect(createdAtCut).toBeLessThan(ids.length);
    await writer.createPlant({ id: 1n, name: "last" });
    await cli.lines(ids.length + 1);
    const { code, stdout, stderr } = await cli.stop();
    expect(code).toBe(0);
    const events = stdout
      .trimEnd()
      .split("\n")
      .map((line) => JSON.parse(line) as { position: number; plant: { id: number } });
    expect(events.map((e) => e.plant.id)).toEqual([...ids.map(Number), 1]);
    expect(events.map((e) => e.position)).toEqual(events.map((_, i) => Number(start) + i + 1));
    expect(lines.length).toBeGreaterThanOrEqual(ids.length);
    // The resume point named on stderr is the last position printed before the cut.
    const resumedAfter = BigInt(/resuming after position (\d+)/.exec(stderr)![1]!);
    expect(resumedAfter).toBeGreaterThanOrEqual(start + 50n);
    expect(stderr).toMatch(
      /^plantstore: the event stream broke off; reconnecting in \d+\.\d s, resuming after position \d+\n$/,
    );
  }, 60_000);

  it("prints a reset and says on stderr to re-list, when the position is not in the log", async () => {
    const start = await head();
    await using cli = spawnCli(["plants", "watch", "--after", String(start + 1000n), ...auth], env());
    expect(await cli.lines(1)).toEqual([`${start} reset`]);
    await cli.stderrMatching(/re-list/);
    await writer.createPlant({ id: 2_000n, name: "after the reset" });
    expect(await cli.lines(2)).toEqual([`${start} reset`, `${start + 1n} created 2000: after the reset`]);
    const result = await cli.stop();
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(new RegExp(`^plantstore: the feed was reset at position ${start}: .*re-list`));
  });

  it("exits 0 without a word when the reader of its output goes away (| head)", async () => {
    const start = await head();
    await writer.createPlant({ id: 3_000n, name: "one" });
    await using cli = spawnCli(["plants", "watch", "--after", String(start), ...auth], env());
    await cli.lines(1);
    cli.closeStdout();
    await writer.createPlant({ id: 3_001n, name: "two" });
    await expect(cli.exited()).resolves.toMatchObject({ code: 0, stderr: "" });
  });

  it("exits 0 on SIGINT before any change arrived", async () => {
    const opened = proxy.accepted();
    await using cli = spawnCli(["plants", "watch", ...auth], env());
    await eventually(() => proxy.accepted() > opened, { what: "the watch's connection" });
    await expect(cli.stop("SIGINT")).resolves.toEqual({ code: 0, stdout: "", stderr: "" });
  });
});

describe("plantstore plants watch refused", () => {
  it("exits 1 on a bad token, without retrying", async () => {
    const result = await runCli(["plants", "watch", ...auth], { PLANTSTORE_TOKEN: "not-the-token" });
    expect(result).toMatchObject({ code: 1, stdout: "" });
    expect(result.stderr).toMatch(/^plantstore: .*\(error 40101 INVALID_TOKEN, HTTP 401\)\n$/);
  });

  it.each([["-1"], ["1.5"], ["9223372036854775808"], ["abc"]])(
    "exits 2 for --after %s, sending nothing",
    async (after) => {
      const opened = proxy.accepted();
      const result = await runCli(["plants", "watch", `--after=${after}`, ...auth], env());
      expect(result.code).toBe(2);
      expect(result.stderr).toMatch(/--after <position>.*Must be a position/);
      expect(proxy.accepted()).toBe(opened);
    },
  );

  it("exits 2 for an empty --tag, sending nothing", async () => {
    const result = await runCli(["plants", "watch", "--tag", "", ...auth], env());
    expect(result).toMatchObject({ code: 2, stdout: "" });
    expect(result.stderr).toMatch(/tag must not be empty/);
  });
});
