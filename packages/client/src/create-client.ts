import { stringifyJsonLossless, type Plant } from "@plantstore/schema";
import { PlantStoreProtocolError } from "./errors.ts";
import { toNewPlant, type NewPlantInput } from "./new-plant-input.ts";
import { readPlantResponse } from "./read-response.ts";

export type PlantStoreClientOptions = {
  /** Where the service is, e.g. `https://plants.example.com` or `http://127.0.0.1:3000/`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <token>`. */
  token: string;
  /** Defaults to the global `fetch`, looked up at each call. */
  fetch?: typeof globalThis.fetch;
};

export type RequestOptions = {
  signal?: AbortSignal;
};

export type PlantStoreClient = {
  /** `POST /plants`: resolves with the stored Plant; safe to retry with the same plant. */
  createPlant(newPlant: NewPlantInput, options?: RequestOptions): Promise<Plant>;
};

// RFC 6750 §2.1 b64token: anything else could not be sent in the header, or not verbatim.
const TOKEN68 = /^[A-Za-z0-9\-._~+/]+=*$/;

/** Node's fetch says only "fetch failed"; the reason (ECONNREFUSED, ENOTFOUND) is in its cause. */
function describe(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  const cause = error instanceof Error ? error.cause : undefined;
  return cause instanceof Error ? `${message} (${cause.message})` : message;
}

function plantsUrl(baseUrl: string): string {
  let url: URL;
  try {
    url = new URL(baseUrl);
  } catch {
    throw new TypeError(`baseUrl is not an absolute URL: ${JSON.stringify(baseUrl)}`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    throw new TypeError(`baseUrl must be http: or https:, not ${url.protocol}`);
  }
  // Keeps any path prefix (`https://host/api/` → `https://host/api/plants`), slash or not.
  return `${url.origin}${url.pathname.replace(/\/+$/, "")}/plants`;
}

/**
 * A client for the Plant Store REST interface. Uses only `fetch`, so it runs in Node >= 22 and in
 * browsers. Configuration mistakes (bad URL, malformed token) throw a TypeError here, at once.
 */
export function createPlantStoreClient(options: PlantStoreClientOptions): PlantStoreClient {
  const url = plantsUrl(options.baseUrl);
  if (typeof options.token !== "string" || !TOKEN68.test(options.token)) {
    throw new TypeError("token must be a non-empty bearer token (RFC 6750 token68 characters)");
  }
  const authorization = `Bearer ${options.token}`;
  // Called as a plain function: a browser's fetch throws "Illegal invocation" when `this` is another object.
  const fetchFn: typeof globalThis.fetch = options.fetch ?? ((input, init) => globalThis.fetch(input, init));

  return {
    async createPlant(newPlant, requestOptions = {}) {
      const body = stringifyJsonLossless(toNewPlant(newPlant));
      const { signal } = requestOptions;
      let response: Response;
      try {
        response = await fetchFn(url, {
          method: "POST",
          headers: { Authorization: authorization, "Content-Type": "application/json", Accept: "application/json" },
          body,
          ...(signal !== undefined ? { signal } : {}),
        });
      } catch (error) {
        // A caller's own abort is not a protocol failure: hand back what they aborted with.
        if (signal?.aborted) throw signal.reason;
        throw new PlantStoreProtocolError(`no response from ${url}: ${describe(error)}`, { cause: error });
      }
      return readPlantResponse(response);
    },
  };
}
