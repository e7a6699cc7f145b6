import { stdSerializers } from "pino";

import { ApiError } from "./errors.ts";
import { StoreError } from "./storage/store-errors.ts";

type Serialized = Record<string, unknown>;

/** What pino's serializer makes every error into (its own prototype), to tell a serialized error from any other object. */
const SERIALIZED_ERROR: unknown = Object.getPrototypeOf(stdSerializers.err(new Error("probe")));

const isPlain = (value: unknown) =>
  value === null || typeof value === "string" || typeof value === "number" || typeof value === "boolean";

/** Drops every field that is neither a plain value nor a serialized error (cleaned the same way). */
function keepPlainFields(serialized: Serialized): void {
  for (const [key, value] of Object.entries(serialized)) {
    if (isPlain(value)) continue;
    if (key === "aggregateErrors" && Array.isArray(value)) {
      for (const nested of value)
        if (Object.getPrototypeOf(nested) === SERIALIZED_ERROR) keepPlainFields(nested as Serialized);
    } else if (typeof value === "object" && Object.getPrototypeOf(value) === SERIALIZED_ERROR) {
      keepPlainFields(value as Serialized);
    } else delete serialized[key];
  }
}

/** The error and its causes, outermost first. */
function causeChain(error: unknown): unknown[] {
  const chain: unknown[] = [];
  for (let at = error; at instanceof Error && !chain.includes(at) && chain.length < 10; at = at.cause) chain.push(at);
  return chain;
}

const codeOf = (error: unknown) => {
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" || typeof code === "number" ? code : undefined;
};

/**
 * The log's `err` serializer: pino's own (type, message and stack with their causes', the error's
 * fields), with two changes. Only plain values are kept: an error may point at anything, and
 * pg-pool sets `client` on the error of a dropped connection, a Client that holds its session's
 * cancel key. And a failure of a known kind (a StoreError anywhere in the chain: an outage, a full
 * disk, a lock wait; or a 503 answer) is written without its stack, which would be the driver's or
 * the same on every line and point at no bug, but with the driver's code (SQLSTATE, errno) when it
 * has none of its own.
 */
export function serializeError(error: unknown): unknown {
  const serialized = stdSerializers.err(error as Error) as unknown;
  // Not error-like (pino hands it back as it is): no stack or cause to look at.
  if (serialized === error || typeof serialized !== "object" || serialized === null) return serialized;
  const fields = serialized as Serialized;
  keepPlainFields(fields);
  const chain = causeChain(error);
  if (chain.some((e) => e instanceof StoreError || (e instanceof ApiError && e.status === 503))) {
    delete fields["stack"];
    const code = chain.map(codeOf).find((c) => c !== undefined);
    if (fields["code"] === undefined && code !== undefined) fields["code"] = code;
  }
  return fields;
}
