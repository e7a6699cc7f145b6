import { router } from "../trpc.ts";
import { plantsRouter } from "./plants.ts";
import { whoamiRouter } from "./whoami.ts";

export const appRouter = router({
  plants: router(plantsRouter),
  whoami: router(whoamiRouter),
});

export type AppRouter = typeof appRouter;
