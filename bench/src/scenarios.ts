import type { Request as AutocannonRequest } from "autocannon";

/**
 * What the load generator sends, as plain data (it crosses into the load process over IPC), and
 * the autocannon request built from it there. Both servers get exactly the same requests.
 */
export type IdMode = "sequential" | "random";

export type RequestSpec =
  /** Authenticated `POST /plants`, every request a new id. */
  | { kind: "insert"; ids: IdMode; idBase: number }
  /** Authenticated `GET /plants?limit=<limit>&after=<random cursor in [0, maxAfter]>`. */
  | { kind: "list"; limit: number; maxAfter: number };

export const PLANT_NAME = "Fern";
export const PLANT_TAG = "fern";
export const INSERT_ANSWER = `{"name":"${PLANT_NAME}","tag":"${PLANT_TAG}"}`;

/**
 * Sequential ids of one load run start at a base of their own, above any prefilled id, so no id
 * repeats across targets, warm-ups and rounds: a repeated id would be answered as a cheap replay
 * and measure the wrong thing. 2^53 / ID_STRIDE leaves room for 900 runs.
 */
export const ID_STRIDE = 10_000_000_000_000;

/** Random ids: uniform over [1, 2^53), so a million requests collide with probability ~1e-4 (and a collision is only a replay). */
function randomId(): number {
  return 1 + Math.floor(Math.random() * (2 ** 53 - 1));
}

export type BuiltRequest = {
  method: "GET" | "POST";
  path: string;
  contentType: boolean;
  setupRequest: (request: AutocannonRequest) => AutocannonRequest;
  verifyBody: (body: string | Buffer | undefined) => boolean;
};

export function buildRequest(spec: RequestSpec): BuiltRequest {
  if (spec.kind === "insert") {
    let next = spec.idBase;
    const id = spec.ids === "random" ? randomId : () => next++;
    return {
      method: "POST",
      path: "/plants",
      contentType: true,
      setupRequest: (request) => {
        request.body = `{"id":${id()},"name":"${PLANT_NAME}","tag":"${PLANT_TAG}"}`;
        return request;
      },
      verifyBody: (body) => body === INSERT_ANSWER,
    };
  }
  const { limit, maxAfter } = spec;
  return {
    method: "GET",
    path: `/plants?limit=${limit}`,
    contentType: false,
    setupRequest: (request) => {
      request.path = `/plants?limit=${limit}&after=${Math.floor(Math.random() * (maxAfter + 1))}`;
      return request;
    },
    // Cursors stay at or below maxAfter, so every page is full: `limit` plant objects.
    verifyBody: (body) =>
      typeof body === "string" && body.startsWith('[{"id":') && body.endsWith("}]") && countItems(body) === limit,
  };
}

function countItems(body: string): number {
  let count = 0;
  for (let at = body.indexOf('{"id":'); at !== -1; at = body.indexOf('{"id":', at + 6)) count++;
  return count;
}
