import react from "@vitejs/plugin-react";
import { defaultClientConditions, defineConfig } from "vite";

/**
 * The API's paths on the server `pnpm turbo dev` starts (packages/server's dev script, PORT or
 * 3000): proxied, so the app calls its own origin in development as it does in production, where
 * the server serves the built app under /app (PLANTSTORE_WEB_DIR) and no CORS setting is needed.
 */
const api = `http://127.0.0.1:${process.env["PORT"] ?? "3000"}`;
const API_PATHS = ["/plants", "/whoami"];

export default defineConfig({
  base: "/app/",
  plugins: [react()],
  // Workspace packages from their TypeScript sources, as the tests and the server's dev script do.
  resolve: { conditions: ["@plantstore/source", ...defaultClientConditions] },
  server: {
    host: "127.0.0.1",
    port: 5173,
    proxy: Object.fromEntries(API_PATHS.map((path) => [path, { target: api }])),
  },
  build: { outDir: "dist", emptyOutDir: true },
});
