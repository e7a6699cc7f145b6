import { WhoAmI } from "@plantstore/schema";
import { z } from "zod";

import { AUTH_ERRORS, header, RATE_LIMIT_HEADERS, REQUEST_ERRORS, SERVER_ERRORS } from "../operation-docs.ts";
import { protectedProcedure } from "../trpc.ts";

export const whoamiRouter = {
  get: protectedProcedure
    .meta({
      openapi: {
        method: "GET",
        path: "/whoami",
        protect: true,
        operationId: "whoAmI",
        summary: "Describe the calling credential",
        tags: ["credentials"],
        description:
          "Describes the credential that made the request: its kind, public id, name, scopes and expiry. Needs no scope; never returns the secret.",
        successDescription: "The calling credential",
      },
      // Needs no scope, so never 403.
      errors: [...AUTH_ERRORS.filter((code) => code !== "INSUFFICIENT_SCOPE"), ...REQUEST_ERRORS, ...SERVER_ERRORS],
      successHeaders: {
        ...RATE_LIMIT_HEADERS,
        "Cache-Control": header("`no-store`: the answer describes the credential itself, so no cache keeps it."),
      },
    })
    .input(z.object({}))
    .output(WhoAmI)
    .query(({ ctx }) => {
      const { principal } = ctx;
      ctx.responseHeaders.set("Cache-Control", "no-store");
      return {
        kind: principal.kind,
        id: principal.tokenId,
        ...(principal.name === undefined ? {} : { name: principal.name }),
        scopes: [...principal.scopes],
        expiresAt: principal.expiresAt === null ? null : new Date(principal.expiresAt).toISOString(),
      };
    }),
};
