import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { Agent, request } from "node:http";
import { fileURLToPath } from "node:url";

import { checkAnswer } from "@plantstore/test-support/response-contract";

import { contractsAt } from "./harness.ts";

/** Helpers for tests that run the built `plantstore-server` as real processes. */
export const BIN = fileURLToPath(new URL("../../dist/bin.js", import.meta.url));

export type ServerProcess = {
  url: string;
  child: ChildProcess;
  output(): string;
  /** SIGTERM, and the exit code (SIGKILL after 10 s). */
  stop(): Promise<number | null>;
};

export async function startServerProcess(
  env: Record<string, string>,
  options: { /** Called with the process id at once, before it listens. */ onSpawn?(pid: number): void } = {},
): Promise<ServerProcess> {
  const child = spawn(process.execPath, [BIN, "serve", "--port", "0"], {
    env: { ...process.env, PLANTSTORE_LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  if (child.pid !== undefined) options.onSpawn?.(child.pid);
  let output = "";
  child.stdout.on("data", (c: Buffer) => (output += c.toString()));
  child.stderr.on("data", (c: Buffer) => (output += c.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    // eslint-disable-next-line no-restricted-syntax -- a guard that fails a start that never says it listens
    const timer = setTimeout(() => reject(new Error(`no listening line within 20 s: ${output}`)), 20_000);
    const onData = () => {
      const match = /"url":"(http:\/\/[^"]+)"/.exec(output);
      if (match?.[1] === undefined) return;
      clearTimeout(timer);
      child.stdout.off("data", onData);
      resolve(match[1]);
    };
    child.stdout.on("data", onData);
    child.once("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`exited ${code} before listening: ${output}`));
    });
  });
  return {
    url,
    child,
    output: () => output,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return child.exitCode;
      const exit = once(child, "exit") as Promise<[number | null]>;
      child.kill("SIGTERM");
      // eslint-disable-next-line no-restricted-syntax -- a guard that kills a process a SIGTERM did not stop
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      const [code] = await exit;
      clearTimeout(timer);
      return code;
    },
  };
}

/**
 * Runs `plantstore-server <args>` to completion: `stdout` is the command's output (`--json`'s
 * JSON), `out` both streams as they came, for messages (stderr names the database first).
 */
export function runBin(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let out = "";
    child.stdout.on("data", (c: Buffer) => {
      stdout += c.toString();
      out += c.toString();
    });
    child.stderr.on("data", (c: Buffer) => (out += c.toString()));
    child.on("close", (code) => resolve({ code, stdout, out }));
  });
}

export type Answer = {
  status: number;
  text: string;
  ms: number;
  /** When the request was sent (Date.now()). */
  startedAt: number;
  retryAfter?: string | undefined;
};

/**
 * POST /plants over a keep-alive agent; a network failure is status 0. Rejects when an answer
 * breaks the seed or the served OpenAPI document.
 */
export function postPlant(
  agent: Agent,
  baseUrl: string,
  token: string,
  body: string,
  timeoutMs = 30_000,
): Promise<Answer> {
  const url = new URL(baseUrl);
  const started = Date.now();
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: "/plants",
        method: "POST",
        agent,
        timeout: timeoutMs,
        headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (c: string) => (text += c));
        res.on("end", () => {
          const status = res.statusCode ?? 0;
          try {
            checkAnswer(contractsAt(baseUrl), {
              method: "POST",
              path: "/plants",
              status,
              contentType: res.headers["content-type"] ?? null,
              body: text,
            });
          } catch (error) {
            reject(error instanceof Error ? error : new Error(String(error)));
            return;
          }
          const retryAfter = res.headers["retry-after"];
          resolve({ status, text, ms: Date.now() - started, startedAt: started, retryAfter });
        });
        res.on("error", () => resolve({ status: 0, text, ms: Date.now() - started, startedAt: started }));
      },
    );
    req.on("timeout", () => req.destroy(new Error("timeout")));
    req.on("error", (error) =>
      resolve({ status: 0, text: error.message, ms: Date.now() - started, startedAt: started }),
    );
    req.end(body);
  });
}

export type CreationLoad = {
  /** Every answer so far, with the id it created. */
  answers: Array<{ id: number; answer: Answer }>;
  /** Whether a request sent before `time` is still waiting for its answer. */
  waitingSince(time: number): boolean;
  stop(): Promise<void>;
};

/**
 * `clients` concurrent callers creating plants with fresh ids (1, 2, …) until stopped, every
 * answer kept. A refused request is retried after `retryPauseMs`, as a real client would, not in a
 * tight loop (and the machine is shared).
 */
export function startCreationLoad(
  server: ServerProcess,
  token: string,
  { clients = 12, retryPauseMs }: { clients?: number; retryPauseMs: number },
): CreationLoad {
  const agent = new Agent({ keepAlive: true, maxSockets: clients });
  const answers: CreationLoad["answers"] = [];
  const waiting = new Set<{ sent: number }>();
  let nextId = 1;
  let running = true;
  const client = async () => {
    while (running) {
      const id = nextId++;
      const sent = { sent: Date.now() };
      waiting.add(sent);
      const answer = await postPlant(agent, server.url, token, `{"id":${id},"name":"p${id}"}`);
      waiting.delete(sent);
      answers.push({ id, answer });
      // eslint-disable-next-line no-restricted-syntax -- the load generator's pause before a retry, as a real client would
      if (answer.status !== 200) await new Promise((r) => setTimeout(r, retryPauseMs));
    }
  };
  const done = Promise.all(Array.from({ length: clients }, client));
  return {
    answers,
    waitingSince: (time) => [...waiting].some(({ sent }) => sent < time),
    async stop() {
      running = false;
      await done;
      agent.destroy();
    },
  };
}

/** Ids as exact BigInts from JSON text (JSON.parse would round those above 2^53). */
export function idOf(json: string): bigint {
  return BigInt(/"id":(-?\d+)/.exec(json)![1]!);
}
