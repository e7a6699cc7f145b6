import type { PlantStoreClient, StreamOpen, WatchPlantsEvent } from "@plantstore/client";
import { useEffect, useRef } from "react";

export type FeedState =
  | { kind: "connecting" }
  | { kind: "live" }
  | { kind: "reconnecting"; attempt: number }
  | { kind: "stopped"; error: unknown };

/**
 * Follows `GET /plants/events` while mounted: every change, whatever the filter (a plant leaving
 * the filtered view must be seen leaving), handed to `onEvent`. The client resumes a dropped
 * connection by itself after the last position seen; `setState` hears of the attempts, and of
 * `live` when a connection has opened, which `onOpen` also gets (to read the list again when the
 * stream did not resume).
 */
export function useLiveFeed(
  client: PlantStoreClient,
  onEvent: (event: WatchPlantsEvent) => void,
  onOpen: (open: StreamOpen) => void,
  setState: (state: FeedState) => void,
): void {
  const handlers = useRef({ onEvent, onOpen });
  handlers.current = { onEvent, onOpen };
  useEffect(() => {
    const stop = new AbortController();
    setState({ kind: "connecting" });
    const follow = async () => {
      try {
        const events = client.watchPlants({
          signal: stop.signal,
          onReconnect: (reconnect) => setState({ kind: "reconnecting", attempt: reconnect.attempt }),
          onOpen: (open) => {
            setState({ kind: "live" });
            handlers.current.onOpen(open);
          },
        });
        for await (const event of events) handlers.current.onEvent(event);
      } catch (error) {
        // 401/403 (a revoked token) and other final answers: another attempt would be refused alike.
        if (!stop.signal.aborted) setState({ kind: "stopped", error });
      }
    };
    void follow();
    return () => stop.abort();
  }, [client, setState]);
}
