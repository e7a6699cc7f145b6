import { Agent, request as httpRequest } from "node:http";

import { checkAnswer } from "@plantstore/test-support/response-contract";

import { contractsAt } from "./harness.ts";

/** One plant a load test sends, with the exact answer a 200 must carry. */
export type SentPlant = { id: bigint; name: string; tag: string | undefined; body: string; answer: string };

/** What became of one request. */
export type Outcome =
  | { kind: "answered"; plant: SentPlant; status: number; text: string; reusedSocket: boolean; at: number }
  | {
      kind: "failed";
      plant: SentPlant;
      code: string;
      /** The request went out on a keep-alive connection that had carried an earlier answer. */
      reusedSocket: boolean;
      /** Part of an answer had arrived when the connection failed: a truncated answer. */
      responseStarted: boolean;
    };

const NAME_PARTS = ["Fern", "Moss", "Ivy", "Sage", "é", "🌿", "多肉", "  ", '"q"', "\\", "a"];

/** A random plant with an id anywhere in int64 (above 2^53 too), an odd-ish name and maybe a tag. */
export function randomPlant(random: () => number = Math.random): SentPlant {
  const high = BigInt(Math.floor(random() * 2 ** 31)) * (random() < 0.5 ? 1n : -1n);
  const id = (high << 32n) | BigInt(Math.floor(random() * 2 ** 32));
  const name = Array.from(
    { length: 1 + Math.floor(random() * 4) },
    () => NAME_PARTS[Math.floor(random() * NAME_PARTS.length)],
  ).join("");
  const tag = random() < 0.5 ? undefined : `t${Math.floor(random() * 1000)}`;
  const fields = `"name":${JSON.stringify(name)}${tag === undefined ? "" : `,"tag":${JSON.stringify(tag)}`}`;
  return { id, name, tag, body: `{"id":${id},${fields}}`, answer: `{${fields}}` };
}

/**
 * POSTs one plant on a keep-alive agent and reports the outcome. Rejects only when a complete
 * answer breaks the seed or served OpenAPI document; a failed request is an outcome.
 */
export function postPlant(url: string, token: string, agent: Agent, plant: SentPlant): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    let responseStarted = false;
    let settled = false;
    const settle = (outcome: Outcome) => {
      if (settled) return;
      settled = true;
      resolve(outcome);
    };
    const req = httpRequest(
      `${url}/plants`,
      {
        method: "POST",
        agent,
        headers: {
          authorization: `Bearer ${token}`,
          "content-type": "application/json",
          "content-length": Buffer.byteLength(plant.body),
        },
      },
      (res) => {
        responseStarted = true;
        const chunks: Buffer[] = [];
        res.on("data", (c: Buffer) => chunks.push(c));
        res.on("end", () => {
          // A body shorter than its Content-Length ends with 'aborted', not here.
          if (!res.complete) return;
          const text = Buffer.concat(chunks).toString("utf8");
          const contentType = res.headers["content-type"] ?? null;
          try {
            checkAnswer(contractsAt(url), {
              method: "POST",
              path: "/plants",
              status: res.statusCode ?? 0,
              contentType,
              body: text,
            });
          } catch (error) {
            settled = true;
            reject(error instanceof Error ? error : new Error(String(error)));
            return;
          }
          settle({
            kind: "answered",
            plant,
            status: res.statusCode ?? 0,
            text,
            reusedSocket: req.reusedSocket,
            at: Date.now(),
          });
        });
        res.on("aborted", () =>
          settle({ kind: "failed", plant, code: "ABORTED", reusedSocket: req.reusedSocket, responseStarted: true }),
        );
        res.on("error", (error: NodeJS.ErrnoException) =>
          settle({
            kind: "failed",
            plant,
            code: error.code ?? error.message,
            reusedSocket: req.reusedSocket,
            responseStarted: true,
          }),
        );
      },
    );
    req.on("error", (error: NodeJS.ErrnoException) =>
      settle({
        kind: "failed",
        plant,
        code: error.code ?? error.message,
        reusedSocket: req.reusedSocket,
        responseStarted,
      }),
    );
    req.end(plant.body);
  });
}

export type LoadOptions = {
  url: string;
  token: string;
  /** Requests in flight at once, each loop on its own keep-alive connection when it can. */
  concurrency: number;
  /** The next plant to send, or undefined to stop this loop. */
  next: () => SentPlant | undefined;
  onOutcome: (outcome: Outcome) => void;
  /** A loop stops after a failed request when this says so (e.g. the server was killed). */
  stopOnFailure?: (outcome: Outcome & { kind: "failed" }) => boolean;
};

/** Sends plants from `concurrency` loops as fast as the server answers; resolves when every loop stopped. */
export async function runLoad(options: LoadOptions): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: options.concurrency });
  try {
    await Promise.all(
      Array.from({ length: options.concurrency }, async () => {
        for (let plant = options.next(); plant !== undefined; plant = options.next()) {
          const outcome = await postPlant(options.url, options.token, agent, plant);
          options.onOutcome(outcome);
          if (outcome.kind === "failed" && (options.stopOnFailure?.(outcome) ?? true)) return;
        }
      }),
    );
  } finally {
    agent.destroy();
  }
}
