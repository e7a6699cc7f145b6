import { join } from "node:path";

/** What our server needs to reach a fresh, empty store, and how to throw it away afterwards. */
export type Backend = {
  name: string;
  env: Record<string, string>;
  dispose(): Promise<void>;
};

// One entry per storage backend; postgres would create a scratch database here and drop it in dispose.
const BACKENDS: Record<string, (scratchDir: string) => Promise<Backend>> = {
  sqlite: async (scratchDir) => ({
    name: "sqlite",
    env: { DATABASE_URL: `sqlite:${join(scratchDir, "plants.db")}` },
    // The file lives in the scratch directory, which the caller removes.
    dispose: async () => {},
  }),
};

export const BACKEND_NAMES = Object.keys(BACKENDS);

export async function openBackend(name: string, scratchDir: string): Promise<Backend> {
  const open = BACKENDS[name];
  if (open === undefined) throw new Error(`unknown backend ${name}; known: ${BACKEND_NAMES.join(", ")}`);
  return open(scratchDir);
}
