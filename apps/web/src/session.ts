import { createPlantStoreClient, type PlantStoreClient } from "@plantstore/client";

/**
 * The bearer token lives in sessionStorage only: gone when the tab closes, never in a URL (no
 * query, no fragment), never logged, never part of an error shown or reported.
 */
const TOKEN_KEY = "plantstore.token";

export function storedToken(): string | undefined {
  return sessionStorage.getItem(TOKEN_KEY) ?? undefined;
}

export function keepToken(token: string): void {
  sessionStorage.setItem(TOKEN_KEY, token);
}

export function forgetToken(): void {
  sessionStorage.removeItem(TOKEN_KEY);
}

/** Called when the change feed's connection has opened (an answer of 200 to `GET /plants/events`). */
export type FeedOpened = () => void;

const FEED_PATH = /\/plants\/events$/;

/**
 * The client for the API on this page's own origin: in development Vite proxies the API paths to
 * the server, in production the server itself serves this app under /app (see README.md).
 * Throws TypeError for a token that cannot be sent as a bearer token.
 *
 * watchPlants reports lost connections (onReconnect) but not opened ones, so the fetch it uses is
 * observed to tell "live" from "reconnecting"; every request still goes through the client.
 */
export function connect(token: string, onFeedOpened: FeedOpened): PlantStoreClient {
  return createPlantStoreClient({
    baseUrl: window.location.origin,
    token,
    fetch: async (input, init) => {
      const response = await globalThis.fetch(input, init);
      const url = input instanceof Request ? input.url : String(input);
      if (response.ok && FEED_PATH.test(new URL(url).pathname)) onFeedOpened();
      return response;
    },
  });
}
