import { serveFloor } from "./floor-app.ts";
import { durableFloorHandlers } from "./floor-durable-handlers.ts";

/**
 * The floor (floor-app.ts) on our own store (floor-durable-handlers.ts): the design card's stack
 * plus durable storage, and nothing else of ours. Run it beside ours with `pnpm bench
 * --compare-bin bench/src/floor-durable-server.ts` (add `--backend postgres` for PostgreSQL); the
 * read and update scenarios start it by themselves, as the target `floor`.
 */
serveFloor("durable floor", await durableFloorHandlers());
