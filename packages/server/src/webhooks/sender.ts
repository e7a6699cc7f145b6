import { request as httpRequest } from "node:http";
import { request as httpsRequest } from "node:https";
import { isIP } from "node:net";

import { Webhook } from "standardwebhooks";

import { type Clock, systemClock } from "../clock.ts";
import type { ClaimedDelivery } from "../storage/webhook-queue.ts";
import type { OutboundPolicy } from "./outbound-guard.ts";

export type SendResult = {
  statusCode: number | null;
  retryAfter: string | undefined;
  error: string | null;
  durationMs: number;
};

/**
 * One attempt: POST the event's exact JSON, signed per Standard Webhooks (`webhook-id` is the
 * same on every attempt; `webhook-timestamp` is this attempt's time, which verifiers check for
 * freshness). The answer's body is drained and ignored.
 */
export function sendDelivery(
  delivery: ClaimedDelivery,
  policy: OutboundPolicy,
  timeoutMs: number,
  clock: Clock = systemClock,
): Promise<SendResult> {
  const started = performance.now();
  const timestamp = new Date();
  const signature = new Webhook(delivery.secret).sign(delivery.messageId, timestamp, delivery.payload);
  const url = new URL(delivery.url);
  const send = url.protocol === "https:" ? httpsRequest : httpRequest;
  // Node connects to an IP literal without calling `lookup`, so the guard must see it here.
  const literal = url.hostname.replace(/^\[|\]$/g, "");
  if (isIP(literal) !== 0 && !policy.isAllowedAddress(literal, literal)) {
    return Promise.resolve({
      statusCode: null,
      retryAfter: undefined,
      error: `webhook target ${literal} is a non-public address (not in PLANTSTORE_WEBHOOK_ALLOWED_HOSTS)`,
      durationMs: Math.round(performance.now() - started),
    });
  }
  return new Promise((resolve) => {
    let settled = false;
    const finish = (result: Omit<SendResult, "durationMs">) => {
      if (settled) return;
      settled = true;
      resolve({ ...result, durationMs: Math.round(performance.now() - started) });
    };
    const req = send(
      url,
      {
        method: "POST",
        lookup: policy.lookup,
        timeout: timeoutMs,
        headers: {
          "content-type": "application/json",
          "user-agent": "plantstore-webhooks/1.0",
          "webhook-id": delivery.messageId,
          "webhook-timestamp": String(Math.floor(timestamp.getTime() / 1000)),
          "webhook-signature": signature,
        },
      },
      (res) => {
        res.resume();
        res.on("end", () =>
          finish({
            statusCode: res.statusCode ?? null,
            retryAfter: res.headers["retry-after"],
            error: null,
          }),
        );
        res.on("error", (error) =>
          finish({ statusCode: res.statusCode ?? null, retryAfter: undefined, error: error.message }),
        );
      },
    );
    // A whole-attempt deadline, not just socket idleness: a receiver that trickles must not hold us.
    // It runs on the dispatcher's clock (socket idleness is Node's, on the wall clock).
    const cancelDeadline = clock.setTimer(() => req.destroy(new Error(`no answer within ${timeoutMs} ms`)), timeoutMs);
    req.on("timeout", () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on("error", (error) => finish({ statusCode: null, retryAfter: undefined, error: error.message }));
    req.on("close", cancelDeadline);
    req.end(delivery.payload);
  });
}
