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

/**
 * The client for the API on this page's own origin: in development Vite proxies the API paths to
 * the server, in production the server itself serves this app under /app (see README.md).
 * Throws TypeError for a token that cannot be sent as a bearer token.
 */
export function connect(token: string): PlantStoreClient {
  return createPlantStoreClient({ baseUrl: window.location.origin, token });
}
