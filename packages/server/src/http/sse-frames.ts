import type { Change } from "../changes/change-log.ts";

/** The reconnection delay a stream asks of its client, in ms (the `retry:` field). */
export const RETRY_MS = 2_000;

export const RETRY_FRAME = `retry: ${RETRY_MS}\n\n`;

/**
 * A position with no event: it sets the client's last event id (a browser's EventSource too: the
 * id is taken at the blank line even when no data came) without dispatching anything. A stream
 * opens with one, so a client that started without a resume point and loses the connection before
 * the first event resumes from where it started rather than from the head at its reconnection; a
 * filtered stream gets one for changes it does not show, so its resume point keeps up with the log
 * and a rarely matching filter does not fall behind the retention.
 */
export function positionFrame(position: bigint): string {
  return `id: ${position}\n\n`;
}
export const HEARTBEAT_FRAME = ": heartbeat\n\n";

/**
 * A `data:` field per line: the log's JSON holds no line break, but a field must not carry one
 * (a CR or LF would end it early and hand the client a truncated event), whatever the log holds.
 */
function dataLines(data: string): string {
  return /[\r\n]/.test(data)
    ? data
        .split(/\r\n|\r|\n/)
        .map((line) => `data: ${line}\n`)
        .join("")
    : `data: ${data}\n`;
}

/** One SSE event per change, in the order given (see the wire format in the server README). */
export function changeFrames(changes: readonly Change[]): string {
  let text = "";
  for (const change of changes) text += `id: ${change.position}\nevent: ${change.kind}\n${dataLines(change.data)}\n`;
  return text;
}

/** The one event a stream resuming from a position the log no longer holds gets instead of a gap. */
export function resetFrame(head: bigint): string {
  const data = JSON.stringify({
    head: String(head),
    message:
      "the resume position is not in the change log (older than its retention, or unknown): re-list the plants, then continue from here",
  });
  return `id: ${head}\nevent: reset\ndata: ${data}\n\n`;
}
