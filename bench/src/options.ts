import { parseArgs } from "node:util";
import { BACKEND_NAMES } from "./backends.ts";

export type Durability = "full" | "normal";
export type Auth = "static" | "opaque" | "jwt";

export type BenchOptions = {
  /** Seconds per measured round. */
  duration: number;
  rounds: number;
  connections: number;
  /** Seconds of load per target before the first round; not measured, but checked for errors. */
  warmup: number;
  backend: string;
  durability: Durability;
  /**
   * `static`: our server with a PLANTSTORE_TOKENS token (the default). `opaque` / `jwt`: also a
   * second copy of our server, measured in the same alternating rounds, authenticated with an
   * issued `ps_` token or an HS256 JWT, so the cost of that authentication is a side-by-side ratio.
   */
  auth: Auth;
  /** Passed to our server as PLANTSTORE_WORKERS when set; unset leaves the server's default. */
  workers: number | undefined;
  smoke: boolean;
  /** Where the JSON goes; default bench/results/<timestamp>.json. */
  out: string | undefined;
};

export const USAGE = `Usage: pnpm bench [options]

  --duration <s>      seconds per round (default 10; smoke 2)
  --rounds <n>        alternating rounds per target (default 3; smoke 1)
  --connections <n>   concurrent connections (default 32; smoke 4)
  --warmup <s>        warm-up seconds per target (default 3; smoke 0)
  --backend <name>    storage for our server: sqlite (default) or postgres (a scratch database)
  --durability <d>    full | normal, passed as PLANTSTORE_DURABILITY (default full)
  --workers <n>       passed as PLANTSTORE_WORKERS (default: unset)
  --auth <kind>       static (default) | opaque | jwt: also measure our server authenticating
                      an issued token or a JWT, beside the static-token one
  --smoke             a short run proving the harness works
  --out <file>        write the JSON here instead of bench/results/<timestamp>.json
  --help              show this text`;

export class UsageError extends Error {}

function positiveInt(name: string, raw: string | undefined, fallback: number, min = 1): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) throw new UsageError(`--${name} must be an integer >= ${min}, got ${raw}`);
  return value;
}

/** Returns undefined for --help. Smoke only changes defaults, so `--smoke --connections 8` still works. */
export function parseOptions(argv: string[]): BenchOptions | undefined {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      options: {
        duration: { type: "string" },
        rounds: { type: "string" },
        connections: { type: "string" },
        warmup: { type: "string" },
        backend: { type: "string" },
        durability: { type: "string" },
        workers: { type: "string" },
        auth: { type: "string" },
        smoke: { type: "boolean", default: false },
        out: { type: "string" },
        help: { type: "boolean", default: false },
      },
    }));
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  if (values.help) return undefined;
  const smoke = values.smoke;
  const durability = values.durability ?? "full";
  if (durability !== "full" && durability !== "normal") {
    throw new UsageError(`--durability must be full or normal, got ${durability}`);
  }
  const auth = values.auth ?? "static";
  if (auth !== "static" && auth !== "opaque" && auth !== "jwt") throw new UsageError(`--auth must be static, opaque or jwt, got ${auth}`);
  const backend = values.backend ?? "sqlite";
  if (!BACKEND_NAMES.includes(backend)) {
    throw new UsageError(`--backend must be one of ${BACKEND_NAMES.join(", ")}, got ${backend}`);
  }
  return {
    duration: positiveInt("duration", values.duration, smoke ? 2 : 10),
    rounds: positiveInt("rounds", values.rounds, smoke ? 1 : 3),
    connections: positiveInt("connections", values.connections, smoke ? 4 : 32),
    warmup: positiveInt("warmup", values.warmup, smoke ? 0 : 3, 0),
    backend,
    durability,
    auth,
    workers: values.workers === undefined ? undefined : positiveInt("workers", values.workers, 1),
    smoke,
    out: values.out,
  };
}
