import type { AnyProcedure } from "@trpc/server";
// Internal to tRPC (the path says so): the only name for what a procedure takes when called.
import type { ProcedureCallOptions } from "@trpc/server/unstable-core-do-not-import";

import type { Context } from "../trpc.ts";

export type ProcedureCall = {
  procedure: AnyProcedure;
  /** The tRPC path (`plants.create`), which middlewares and errors see. */
  path: string;
  type: "query" | "mutation";
  ctx: Context;
  /** The input as read from the request, before the procedure's parser. */
  input: unknown;
};

/**
 * Calls one procedure through its middlewares and its input and output parsers, as tRPC's own
 * adapters do, and resolves with its output or rejects with what it threw (a TRPCError).
 *
 * tRPC has no public way to call a procedure it has already found: `createCaller` builds a proxy
 * per context and looks the path up again on every call, a cost on every request that the route
 * table has already paid. So this calls the procedure with tRPC's internal call options, and it is
 * the only place that does: `call-procedure.test.ts` pins the tRPC version it was checked against,
 * and patches/README.md lists what to check on an upgrade.
 */
export function callProcedure(call: ProcedureCall): Promise<unknown> {
  const options: ProcedureCallOptions<Context> = {
    ctx: call.ctx,
    getRawInput: async () => call.input,
    path: call.path,
    type: call.type,
    signal: undefined,
    batchIndex: 0,
  };
  return call.procedure(options);
}
