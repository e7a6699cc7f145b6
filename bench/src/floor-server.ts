import { type FloorPlant, serveFloor } from "./floor-app.ts";

/**
 * The floor (floor-app.ts) keeping plants in a Map: the design card's stack alone. Run it beside
 * ours with `pnpm bench --compare-bin bench/src/floor-server.ts`.
 */
const plants = new Map<number, FloorPlant>();
serveFloor("floor", {
  create: (plant) => {
    plants.set(plant.id, plant);
  },
});
