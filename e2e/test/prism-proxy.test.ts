import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";

import { NEW_PLANT_EXAMPLE } from "@plantstore/schema";
import * as plantStoreServer from "@plantstore/server";
import { type RealServer, startRealServer } from "@plantstore/test-support/real-server";
import { TEST_TOKEN } from "@plantstore/test-support/test-config";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { cleanEnv, ROOT } from "./workspace.ts";

/**
 * The served `/openapi.json` as a contract-testing proxy reads it: Prism (`prism proxy --errors`)
 * in front of a real server forwards a request only when the document has its operation, and
 * answers 405 itself otherwise. Every HEAD the document lists is forwarded and answered by the
 * server; the same document without its HEAD operations gets 405 for them, which shows the proxy
 * really checks.
 */

type Doc = { paths: Record<string, Record<string, unknown>> };
type Prism = { url: string; output(): string; stop(): Promise<void> };

const require = createRequire(import.meta.url);
const PRISM = join(dirname(require.resolve("@stoplight/prism-cli/package.json")), "dist", "index.js");

async function freePort(): Promise<number> {
  const probe = createServer().listen(0, "127.0.0.1");
  await once(probe, "listening");
  const { port } = probe.address() as { port: number };
  probe.close();
  await once(probe, "close");
  return port;
}

/** `prism proxy` for a document file in front of `upstream`, once it listens. */
async function startPrism(documentFile: string, upstream: string): Promise<Prism> {
  const port = await freePort();
  const child: ChildProcess = spawn(
    process.execPath,
    [PRISM, "proxy", documentFile, upstream, "--port", String(port), "--host", "127.0.0.1", "--errors"],
    { cwd: ROOT, env: cleanEnv({ SCARF_ANALYTICS: "false", DO_NOT_TRACK: "1" }), stdio: ["ignore", "pipe", "pipe"] },
  );
  let output = "";
  await new Promise<void>((resolve, reject) => {
    // eslint-disable-next-line no-restricted-syntax -- a deadline, not a pause: fails the start that never comes
    const timer = setTimeout(() => reject(new Error(`prism did not start in 60 s:\n${output}`)), 60_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString("utf8");
      if (output.includes("Prism is listening")) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout!.on("data", onData);
    child.stderr!.on("data", onData);
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`prism exited with ${code} before listening:\n${output}`));
    });
  });
  return {
    url: `http://127.0.0.1:${port}`,
    output: () => output,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, "exit");
      child.kill("SIGTERM");
      await exited;
    },
  };
}

let server: RealServer<plantStoreServer.RunningServer>;
let dir: string;
let served: Doc;
const prisms: Prism[] = [];

beforeAll(async () => {
  server = await startRealServer(plantStoreServer);
  const response = await fetch(`${server.url}/openapi.json`);
  expect(response.status).toBe(200);
  served = (await response.json()) as Doc;
  dir = mkdtempSync(join(tmpdir(), "plantstore-prism-"));
  const created = await fetch(`${server.url}/plants`, {
    method: "POST",
    headers: { authorization: `Bearer ${TEST_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(NEW_PLANT_EXAMPLE),
  });
  expect(created.status).toBe(200);
}, 60_000);

afterAll(async () => {
  for (const prism of prisms) await prism.stop();
  await server?.close();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

async function prismFor(name: string, document: Doc): Promise<Prism> {
  const file = join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify(document));
  const prism = await startPrism(file, server.url);
  prisms.push(prism);
  return prism;
}

/** Each path with a HEAD in the document, made concrete with the example plant's id. */
const headTargets = (document: Doc) =>
  Object.entries(document.paths)
    .filter(([, item]) => item["head"] !== undefined)
    .map(([path]) => path.replace("{id}", String(NEW_PLANT_EXAMPLE.id)));

const head = (prism: Prism, path: string) =>
  fetch(`${prism.url}${path}`, { method: "HEAD", headers: { authorization: `Bearer ${TEST_TOKEN}` } });

describe("prism proxy --errors in front of a real server", () => {
  it(
    "finds a HEAD operation for every GET path of the served document and forwards it, answered 200 upstream",
    { timeout: 120_000 },
    async () => {
      const prism = await prismFor("served", served);
      const targets = headTargets(served);
      expect(targets).toEqual(["/plants", "/plants/events", `/plants/${NEW_PLANT_EXAMPLE.id}`, "/whoami"]);
      for (const path of targets) {
        const answer = await head(prism, path);
        await answer.arrayBuffer();
        expect(answer.status, `${path}\n${prism.output()}`).not.toBe(405);
        expect(prism.output()).toContain(`The upstream call to ${path} has returned 200`);
      }
      // The stream's answer comes back whole. For the JSON ones, Prism 5.16's proxy then parses the
      // empty body of the HEAD answer as JSON (its `Content-Type` is the GET's, as RFC 9110 §9.3.2
      // asks) and answers 500 itself: a defect of the proxy, not of the request or the document.
      const stream = await head(prism, "/plants/events");
      expect(stream.status).toBe(200);
      expect(stream.headers.get("cache-control")).toBe("no-store");
    },
  );

  it(
    "answers 405 to the same HEADs when the document lists none, as it did before they were listed",
    { timeout: 120_000 },
    async () => {
      const withoutHead = structuredClone(served);
      for (const item of Object.values(withoutHead.paths)) delete item["head"];
      const prism = await prismFor("without-head", withoutHead);
      for (const path of headTargets(served)) {
        const answer = await head(prism, path);
        await answer.arrayBuffer();
        expect(answer.status, path).toBe(405);
      }
      expect(prism.output()).not.toContain('Forwarding "head"');
    },
  );
});
