import { PlantStoreProtocolError } from "./errors.ts";

/** What every operation needs: where the plants live and how to send one authorised request. */
export type Connection = {
  /** `<baseUrl>/plants`, with any path prefix of the base URL kept and no trailing slash. */
  plantsUrl: string;
  /**
   * Sends one request with the bearer token. A network failure rejects with a
   * PlantStoreProtocolError (without `status`); the caller's own abort rejects with its reason.
   */
  send(url: string, init: SendInit): Promise<Response>;
};

export type SendInit = {
  method: string;
  headers?: Record<string, string>;
  body?: string;
  signal?: AbortSignal | undefined;
};

/** Node's fetch says only "fetch failed"; the reason (ECONNREFUSED, ENOTFOUND) is in its cause. */
function describe(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const cause = error instanceof Error ? error.cause : undefined;
  return cause instanceof Error ? `${message} (${cause.message})` : message;
}

export function createConnection(
  plantsUrl: string,
  authorization: string,
  fetchFn: typeof globalThis.fetch,
): Connection {
  return {
    plantsUrl,
    async send(url, { method, headers = {}, body, signal }) {
      try {
        return await fetchFn(url, {
          method,
          headers: { Authorization: authorization, Accept: "application/json", ...headers },
          ...(body !== undefined ? { body } : {}),
          ...(signal !== undefined ? { signal } : {}),
        });
      } catch (error) {
        // A caller's own abort is not a protocol failure: hand back what they aborted with.
        if (signal?.aborted) throw signal.reason;
        throw new PlantStoreProtocolError(`no response from ${url}: ${describe(error)}`, { cause: error });
      }
    },
  };
}
