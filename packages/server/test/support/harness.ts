import { request as httpRequest } from "node:http";
import { Writable } from "node:stream";

import { startRealServer } from "@plantstore/test-support/real-server";
import { checkAnswer, type OpenApiDoc, ResponseContract } from "@plantstore/test-support/response-contract";
import { seedDocument } from "@plantstore/test-support/seed-document";
import { OTHER_TEST_TOKEN, TEST_TOKEN, testServerConfig } from "@plantstore/test-support/test-config";

import {
  appRouter,
  buildOpenApiDocument,
  type Clock,
  type Config,
  loadConfig,
  type RunningServer,
  startServer,
} from "../../src/index.ts";
import { createLogger } from "../../src/logger.ts";
import { closeIdleClientConnections } from "./client-connections.ts";
import { createTestDatabase, type TestDatabase } from "./test-database.ts";

export { TEST_BACKEND } from "./test-database.ts";

export const TOKEN = TEST_TOKEN;
export const OTHER_TOKEN = OTHER_TEST_TOKEN;

export type TestServer = RunningServer & {
  /** The server's own fresh database (SQLite file or PostgreSQL scratch database), readable directly. */
  database: TestDatabase;
  /** Sends a request and checks the response against the seed and the served OpenAPI documents. */
  send(options: SendOptions): Promise<TestResponse>;
  /** POST /plants with a JSON body text and the test token. */
  createRaw(bodyText: string, headers?: Record<string, string>): Promise<TestResponse>;
  served: OpenApiDoc;
};

export type SendOptions = {
  method: string;
  path: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** The template the contract is looked up under, when `path` is not literal. */
  contractPath?: string;
};

export type TestResponse = {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  json: unknown;
};

const seedContract = new ResponseContract("seed openapi.json", seedDocument, { errorFallback: true });

/**
 * The document the router builds, which every server of this code serves (the body limit it
 * names in a description aside). It stands in for the served one where a test talks to a server
 * that startTestServer did not start (spawned processes, `startServer` called directly): fetching
 * their `/openapi.json` would add a request to the logs and metrics those tests count.
 */
const builtContract = new ResponseContract(
  "openapi.json built from the router",
  buildOpenApiDocument(appRouter, { bodyLimitBytes: loadConfig({}).bodyLimitBytes }) as unknown as OpenApiDoc,
  { errorFallback: false },
);

/** The documents served by the servers startTestServer started, by base URL, while they run. */
const servedContracts = new Map<string, ResponseContract>();

/** The seed and the document the server at `url` serves (or, if not at hand, the router's). */
export function contractsAt(url: string): ResponseContract[] {
  return [seedContract, servedContracts.get(url) ?? builtContract];
}

/**
 * The Error rule alone, for answers whose request is unknown (raw-socket answers, some written by
 * Node before the app sees a request): a 4xx or 5xx must carry an `Error` body in both documents.
 */
export function checkErrorAnswer(status: number, contentType: string | null | undefined, bodyText: string): void {
  if (status < 400) return;
  for (const contract of [seedContract, builtContract]) contract.checkError(status, contentType ?? null, bodyText);
}

/**
 * Raw HTTP (node:http, not fetch) so tests control every header and byte. Every answer is checked
 * against the seed and the served document (see `checkAnswer` for what they leave out); a
 * violation rejects.
 */
export async function rawRequest(url: string, options: SendOptions): Promise<TestResponse> {
  const response = await exchange(url, options);
  checkAnswer(contractsAt(url), {
    method: options.method,
    path: options.contractPath ?? options.path,
    status: response.status,
    contentType: (response.headers["content-type"] as string | undefined) ?? null,
    body: response.text,
  });
  return response;
}

function exchange(url: string, options: SendOptions): Promise<TestResponse> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${url}${options.path}`,
      { method: options.method, headers: options.headers ?? {} },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          let json: unknown;
          try {
            json = text.length > 0 ? JSON.parse(text) : undefined;
          } catch {
            json = undefined;
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
        res.on("error", reject);
      },
    );
    req.on("error", reject);
    req.end(options.body);
  });
}

/** Every test server's settings (see `testServerConfig`), for tests that call `startServer` themselves. */
export function testConfig(databaseUrl: string, overrides: Partial<Config> = {}): Config {
  return testServerConfig(loadConfig({}), databaseUrl, overrides);
}

/**
 * The real server on an ephemeral port with a fresh database of the backend under test
 * (`PLANTSTORE_TEST_BACKEND`, see test-database.ts); `await using` closes it and drops the
 * database. Pass `database` to start a second server on an existing one (then it is not dropped),
 * `clock` to time its webhook delivery (see skippable-clock.ts).
 */
export async function startTestServer(
  overrides: Partial<Config> = {},
  shared: { database?: TestDatabase; clock?: Clock } = {},
): Promise<TestServer> {
  const database = shared.database ?? (await createTestDatabase());
  // Silent whatever the overrides' logLevel: tests that read the log start a server of their own.
  const server = {
    loadConfig,
    startServer: (options: { config: Config }) =>
      startServer({ ...options, logger: createLogger("silent"), clock: shared.clock }),
  };
  // A shared database outlives this server: it is not handed over to be disposed.
  const running = await startRealServer(server, {
    config: overrides,
    database: shared.database === undefined ? database : { url: database.url },
  });
  const servedText = await rawRequest(running.url, { method: "GET", path: "/openapi.json" });
  const served = JSON.parse(servedText.text) as OpenApiDoc;
  servedContracts.set(running.url, new ResponseContract("served /openapi.json", served, { errorFallback: false }));

  const send = (options: SendOptions) => rawRequest(running.url, options);

  const close = async () => {
    servedContracts.delete(running.url);
    closeIdleClientConnections(running.url);
    await running.close();
  };
  return {
    ...running,
    database,
    served,
    send,
    createRaw: (bodyText, headers = {}) =>
      send({
        method: "POST",
        path: "/plants",
        headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json", ...headers },
        body: bodyText,
      }),
    close,
    [Symbol.asyncDispose]: close,
  };
}

/** Every non-2xx answer must be exactly `{error:int32, message:string}` as application/json. */
export function expectErrorShape(response: TestResponse, status: number, code: number): void {
  if (response.status !== status) {
    throw new Error(`expected ${status}, got ${response.status}: ${response.text}`);
  }
  const contentType = String(response.headers["content-type"] ?? "");
  if (!contentType.startsWith("application/json")) throw new Error(`Content-Type was ${contentType}`);
  const body = response.json as Record<string, unknown>;
  const keys = Object.keys(body ?? {}).sort();
  if (keys.join(",") !== "error,message") throw new Error(`Error body keys were ${keys.join(",")}: ${response.text}`);
  if (body["error"] !== code) throw new Error(`expected error ${code}, got ${String(body["error"])}: ${response.text}`);
  if (typeof body["message"] !== "string" || body["message"].length === 0) throw new Error("empty message");
  if (/\bat .+:\d+:\d+/.test(String(body["message"]))) throw new Error(`message leaks a stack: ${response.text}`);
}

/** A log destination that keeps each JSON line a server writes, for tests that read its log. */
export function logLines(): { lines: string[]; sink: Writable } {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(
        ...chunk
          .toString("utf8")
          .split("\n")
          .filter((l) => l.length > 0),
      );
      done();
    },
  });
  return { lines, sink };
}
