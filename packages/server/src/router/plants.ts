import { NewPlant, Plant } from "@plantstore/schema";
import { ApiError } from "../http/api-error.ts";
import { toTRPCError } from "../http/trpc-errors.ts";
import { protectedProcedure } from "../trpc.ts";

export const plantsRouter = {
  create: protectedProcedure
    .meta({
      openapi: {
        method: "POST",
        path: "/plants",
        protect: true,
        operationId: "createPlant",
        description: "Creates a new plant in the store",
        successDescription: "Plant response",
      },
      scopes: ["plants:write"],
    })
    .input(NewPlant)
    .output(Plant)
    .mutation(async ({ ctx, input }) => {
      const outcome = await ctx.store.create(input);
      if (outcome === "conflict") {
        throw toTRPCError(
          new ApiError("ID_CONFLICT", `a plant with id ${input.id} is already stored with a different name or tag`),
        );
      }
      // `created` and `replayed` answer alike: a retry of the same request is indistinguishable from the first.
      return input.tag === undefined ? { name: input.name } : { name: input.name, tag: input.tag };
    }),
};
