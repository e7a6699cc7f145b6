import { PlantStoreProtocolError } from "./errors.ts";

/** What every operation needs: where its path is and how to send one authorised request. */
export type Connection = {
  /**
   * The URL of an operation's path (`/plants`, `/whoami`) under the base URL, any path prefix of
   * the base URL kept: `https://host/api/` → `https://host/api/plants`.
   */
  url(path: `/${string}`): string;
  /**
   * Sends one request with the bearer token. A network failure rejects with a
   * PlantStoreProtocolError (without `status`); the caller's own abort rejects with its reason.
   */
  send(url: string, init: SendInit): Promise<Response>;
};

type SendInit = {
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

/**
 * `serviceRoot` is the base URL's origin and path without a trailing slash (serviceRoot in
 * create-client.ts): every operation's path is appended to it.
 */
export function createConnection(
  serviceRoot: string,
  authorization: string,
  fetchFn: typeof globalThis.fetch,
): Connection {
  return {
    url: (path) => `${serviceRoot}${path}`,
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
