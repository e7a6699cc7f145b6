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
  | { kind: "list"; limit: number; maxAfter: number }
  /** Authenticated `GET /plants/{id}`, the id uniform over the prefilled [1, maxId]. */
  | { kind: "read"; maxId: number }
  /**
   * Authenticated `PATCH /plants/{id}` with `If-Match`, renaming one of the prefilled plants
   * 1..plants every time. Each plant is patched by one request at a time and carries the ETag of its
   * previous answer (read with a GET just before the job): every PATCH holds the current ETag, so
   * every one succeeds, and a 412 is an error like any other.
   */
  | { kind: "update"; plants: number };

type UpdatePlant = { id: number; etag: string };

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

/** What autocannon keeps per connection from one request's setup to its answer (and then resets). */
type RequestContext = Record<string, unknown>;

export type BuiltRequest = {
  method: "GET" | "POST" | "PATCH";
  path: string;
  contentType: string | undefined;
  setupRequest: (request: AutocannonRequest, context: RequestContext) => AutocannonRequest;
  verifyBody: (body: string | Buffer | undefined) => boolean;
  /** A check of the answer that needs its request (or headers): false counts as an unexpected body. */
  checkResponse?: (status: number, body: string, context: RequestContext, headers: Record<string, unknown>) => boolean;
};

/** The plant as `GET /plants/{id}` and `PATCH` answer it, byte for byte. */
export const plantAnswer = (id: number, name: string) => `{"id":${id},"name":"${name}","tag":"${PLANT_TAG}"}`;

/** A strong entity tag as the contract writes it: 27 base64url characters in quotes. */
const ETAG = /^"[A-Za-z0-9_-]{27}"$/;

/** autocannon keeps the server's spelling of header names. */
function headerValue(headers: Record<string, unknown>, name: string): string | undefined {
  for (const [key, value] of Object.entries(headers))
    if (key.toLowerCase() === name && typeof value === "string") return value;
  return undefined;
}

/** The request of a job; an update job first reads the current ETag of each of its plants. */
export async function prepareRequest(spec: RequestSpec, url: string, token: string): Promise<BuiltRequest> {
  return spec.kind === "update" ? buildUpdate(await currentETags(url, token, spec.plants)) : buildRequest(spec);
}

function buildRequest(spec: Exclude<RequestSpec, { kind: "update" }>): BuiltRequest {
  if (spec.kind === "insert") {
    let next = spec.idBase;
    const id = spec.ids === "random" ? randomId : () => next++;
    return {
      method: "POST",
      path: "/plants",
      contentType: "application/json",
      setupRequest: (request) => {
        request.body = `{"id":${id()},"name":"${PLANT_NAME}","tag":"${PLANT_TAG}"}`;
        return request;
      },
      verifyBody: (body) => body === INSERT_ANSWER,
    };
  }
  if (spec.kind === "read") {
    const { maxId } = spec;
    return {
      method: "GET",
      path: "/plants/1",
      contentType: undefined,
      setupRequest: (request, context) => {
        const id = 1 + Math.floor(Math.random() * maxId);
        context["id"] = id;
        request.path = `/plants/${id}`;
        return request;
      },
      verifyBody: (body) => typeof body === "string" && body.startsWith('{"id":'),
      checkResponse: (status, body, context, headers) =>
        status === 200 &&
        body === plantAnswer(context["id"] as number, PLANT_NAME) &&
        ETAG.test(headerValue(headers, "etag") ?? ""),
    };
  }
  const { limit, maxAfter } = spec;
  return {
    method: "GET",
    path: `/plants?limit=${limit}`,
    contentType: undefined,
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

/**
 * A queue rather than one plant per connection: autocannon gives a request no handle on its
 * connection, and resets the per-connection context after every answer. A plant is out of the
 * queue from the setup of its request until its answer, so no two PATCHes ever race for one plant.
 * The setup and the write of a request happen in the same turn, so the queue never runs dry while
 * there are at least as many plants as connections (the harness gives it twice as many, for
 * requests a reconnection abandons).
 */
function buildUpdate(plants: UpdatePlant[]): BuiltRequest {
  const free = [...plants];
  let renames = 0;
  return {
    method: "PATCH",
    path: "/plants/1",
    contentType: "application/merge-patch+json",
    setupRequest: (request, context) => {
      const plant = free.shift();
      if (plant === undefined)
        throw new Error("update: every plant is in flight; give the load more plants than connections");
      const name = `${PLANT_NAME} ${++renames}`;
      context["plant"] = plant;
      context["name"] = name;
      request.path = `/plants/${plant.id}`;
      request.headers = { ...request.headers, "if-match": plant.etag };
      request.body = `{"name":"${name}"}`;
      return request;
    },
    verifyBody: (body) => typeof body === "string" && body.startsWith('{"id":'),
    checkResponse: (status, body, context, headers) => {
      const plant = context["plant"] as UpdatePlant;
      // A 412 carries the current ETag too: the plant goes back either way, the run fails on the status.
      const etag = headerValue(headers, "etag");
      free.push(etag === undefined ? plant : { id: plant.id, etag });
      return (
        status === 200 &&
        body === plantAnswer(plant.id, context["name"] as string) &&
        etag !== undefined &&
        ETAG.test(etag)
      );
    },
  };
}

/** Reads the current ETag of plants 1..count, before an update job starts (the previous job renamed them). */
export async function currentETags(url: string, token: string, count: number): Promise<UpdatePlant[]> {
  const plants: UpdatePlant[] = [];
  for (let id = 1; id <= count; id++) {
    const response = await fetch(`${url}/plants/${id}`, { headers: { authorization: `Bearer ${token}` } });
    await response.arrayBuffer();
    const etag = response.headers.get("etag");
    if (response.status !== 200 || etag === null)
      throw new Error(
        `GET /plants/${id} answered ${response.status}${etag === null ? " without an ETag" : ""} before the update job`,
      );
    plants.push({ id, etag });
  }
  return plants;
}
