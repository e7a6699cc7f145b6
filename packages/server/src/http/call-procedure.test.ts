import { readFileSync } from "node:fs";
import { findPackageJSON } from "node:module";

import { TRPCError } from "@trpc/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";

import { ALL_SCOPES, type Principal } from "../auth/principal.ts";
import { toApiError } from "../errors.ts";
import { appRouter } from "../router/root.ts";
import { openStore } from "../storage/open-store.ts";
import type { PlantStore } from "../storage/plant-store.ts";
import { type Context, protectedProcedure, router } from "../trpc.ts";
import { callProcedure } from "./call-procedure.ts";

/** The version of a package as this module resolves it (trpc-to-openapi exports no `./package.json`). */
function installed(name: string): string {
  const path = findPackageJSON(name, import.meta.url);
  if (path === undefined) throw new Error(`${name} is not installed`);
  return (JSON.parse(readFileSync(path, "utf8")) as { version: string }).version;
}

const OPERATOR: Principal = {
  kind: "static",
  tokenId: "static-1",
  scopes: ALL_SCOPES,
  expiresAt: null,
  rateLimitKey: null,
};

let store: PlantStore;
beforeAll(async () => {
  store = await openStore("sqlite::memory:");
});
afterAll(async () => {
  await store.close();
});

const context = (principal: Principal | null = OPERATOR): Context => ({
  principal,
  store,
  responseHeaders: new Map(),
  preconditions: {},
  response: {},
});

/** The reason a call rejected, for assertions on its fields. */
async function rejectionOf(call: Promise<unknown>): Promise<unknown> {
  return call.then(
    (value) => {
      throw new Error(`expected a rejection, got ${JSON.stringify(value)}`);
    },
    (error: unknown) => error,
  );
}

describe("callProcedure, the one call into tRPC's internal procedure-call shape", () => {
  // An upgrade lands here first, on purpose: follow "Upgrading tRPC or trpc-to-openapi" in
  // patches/README.md, then change the versions below.
  it("was checked against @trpc/server 11.25.2 and trpc-to-openapi 3.3.0, the installed versions", () => {
    expect(installed("@trpc/server")).toBe("11.25.2");
    expect(installed("trpc-to-openapi")).toBe("3.3.0");
  });

  it("runs the middleware, the input parser and the resolver, and resolves with the parsed output", async () => {
    const ctx = context();
    const output = await callProcedure({
      procedure: appRouter.plants.create,
      path: "plants.create",
      type: "mutation",
      ctx,
      input: { id: 9007199254740993n, name: "Monstera", tag: "aroid", unknown: "ignored" },
    });
    expect(output).toEqual({ name: "Monstera", tag: "aroid" });
    expect(await store.get(9007199254740993n)).toEqual({ id: 9007199254740993n, name: "Monstera", tag: "aroid" });
  });

  it("rejects with the middleware's catalogued error when the principal is missing", async () => {
    const thrown = await rejectionOf(
      callProcedure({
        procedure: appRouter.whoami.get,
        path: "whoami.get",
        type: "query",
        ctx: context(null),
        input: {},
      }),
    );
    expect(thrown).toBeInstanceOf(TRPCError);
    expect(toApiError(thrown)).toMatchObject({ code: "MISSING_TOKEN", status: 401 });
  });

  it("rejects input its parser refuses with BAD_REQUEST carrying the issues, which become VALIDATION_FAILED", async () => {
    const thrown = await rejectionOf(
      callProcedure({
        procedure: appRouter.plants.create,
        path: "plants.create",
        type: "mutation",
        ctx: context(),
        input: { id: 1n, name: 7 },
      }),
    );
    expect(thrown).toBeInstanceOf(TRPCError);
    expect((thrown as TRPCError).code).toBe("BAD_REQUEST");
    const answer = toApiError(thrown);
    expect(answer.code).toBe("VALIDATION_FAILED");
    expect(answer.message).toMatch(/^name /);
  });

  it("passes path and type to middlewares and keeps the adapter's ctx objects through a ctx override", async () => {
    const seen: Array<{ path: string; type: string }> = [];
    const probe = router({
      headers: protectedProcedure
        .use(({ path, type, next }) => {
          seen.push({ path, type });
          return next();
        })
        .input(z.object({ n: z.number() }))
        .output(z.object({ doubled: z.number() }))
        .query(({ ctx, input }) => {
          // The adapter reads the headers from its own Map after the call: tRPC's merge must keep it.
          ctx.responseHeaders.set("Link", "</next>; rel=next");
          return { doubled: input.n * 2, dropped: "by the output parser" };
        }),
    });
    const ctx = context();
    const output = await callProcedure({
      procedure: probe.headers,
      path: "probe.headers",
      type: "query",
      ctx,
      input: { n: 21 },
    });
    expect(output).toEqual({ doubled: 42 });
    expect(seen).toEqual([{ path: "probe.headers", type: "query" }]);
    expect(ctx.responseHeaders.get("Link")).toBe("</next>; rel=next");
  });
});
