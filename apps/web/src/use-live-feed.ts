import type { PlantStoreClient, WatchPlantsEvent } from "@plantstore/client";
import { useEffect, useRef } from "react";

export type FeedState =
  | { kind: "connecting" }
  | { kind: "live" }
  /** `resumable`: a position was seen, so the feed resumes after it; else changes meanwhile may be missed. */
  | { kind: "reconnecting"; attempt: number; resumable: boolean }
  | { kind: "stopped"; error: unknown };

/**
 * Follows `GET /plants/events` while mounted: every change, whatever the filter (a plant leaving
 * the filtered view must be seen leaving), handed to `onEvent`. The client resumes a dropped
 * connection by itself after the last position seen; `setState` hears of the attempts, and
 * `live` again from the client's fetch when a connection opens (see session.ts).
 */
export function useLiveFeed(
  client: PlantStoreClient,
  onEvent: (event: WatchPlantsEvent) => void,
  setState: (state: FeedState) => void,
): void {
  const handler = useRef(onEvent);
  handler.current = onEvent;
  useEffect(() => {
    const stop = new AbortController();
    setState({ kind: "connecting" });
    const follow = async () => {
      try {
        const events = client.watchPlants({
          signal: stop.signal,
          onReconnect: (reconnect) =>
            setState({ kind: "reconnecting", attempt: reconnect.attempt, resumable: reconnect.after !== undefined }),
        });
        for await (const event of events) handler.current(event);
      } catch (error) {
        // 401/403 (a revoked token) and other final answers: another attempt would be refused alike.
        if (!stop.signal.aborted) setState({ kind: "stopped", error });
      }
    };
    void follow();
    return () => stop.abort();
  }, [client, setState]);
}
