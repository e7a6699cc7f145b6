/**
 * The custom fetch (orval's "mutator") every function of an orval fetch client generated from
 * `/openapi.json` calls, as a user writes one for the base URL and the token. orval's own fetch
 * reads each body to its end before it returns; for `text/event-stream`, which has no end, this one
 * hands back the text that arrived until the caller stopped listening (its signal) or the server
 * ended the stream, so the call resolves instead of waiting forever.
 */

const connection = { baseUrl: "", token: "" };

export function connectPlantStore(baseUrl: string, token: string): void {
  connection.baseUrl = baseUrl;
  connection.token = token;
}

/** A generated function's options: `fetch`'s, and a look at a stream's text as it arrives. */
export type PlantStoreInit = RequestInit & { onText?: (text: string) => void };

export async function plantStoreFetch<T>(url: string, init: PlantStoreInit): Promise<T> {
  const { onText, ...request } = init;
  const headers = new Headers(request.headers);
  headers.set("Authorization", `Bearer ${connection.token}`);
  const response = await fetch(new URL(url, connection.baseUrl), { ...request, headers });
  const type = response.headers.get("content-type") ?? "";
  const text = type.startsWith("text/event-stream")
    ? await textUntilClosed(response, request.signal, onText)
    : await response.text();
  const data: unknown = text === "" ? undefined : type.includes("json") ? JSON.parse(text) : text;
  return { status: response.status, data, headers: response.headers } as T;
}

async function textUntilClosed(
  response: Response,
  signal: AbortSignal | null | undefined,
  onText: ((text: string) => void) | undefined,
): Promise<string> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return text + decoder.decode();
      text += decoder.decode(value, { stream: true });
      onText?.(text);
    }
  } catch (error) {
    // The caller stopped listening: what arrived until then is the answer.
    if (signal?.aborted === true) return text;
    throw error;
  }
}
