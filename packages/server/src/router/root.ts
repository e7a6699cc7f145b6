import { router } from "../trpc.ts";
import { plantsRouter } from "./plants.ts";

export const appRouter = router({
  plants: router(plantsRouter),
});

export type AppRouter = typeof appRouter;
