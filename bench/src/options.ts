import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";

import { BACKEND_NAMES } from "./backends.ts";
import type { LoadGeneratorName } from "./load.ts";
import type { IdMode } from "./scenarios.ts";

type Durability = "full" | "normal";
type Scenario = "insert" | "list" | "read" | "update" | "soak" | "feed";

/** The insert, read and update scenarios' floor: the design card's stack on our store (floor-durable-server.ts). */
const DURABLE_FLOOR = fileURLToPath(new URL("./floor-durable-server.ts", import.meta.url));
type Auth = "static" | "opaque" | "jwt";

/** One configuration of our server; several in one run are measured side by side. */
export type Variant = {
  /** `ours`, or `ours[durability=normal]` etc. when a run compares several. */
  name: string;
  durability: Durability;
  /** Passed to our server as PLANTSTORE_WORKERS when set; unset leaves the server's default. */
  workers: number | undefined;
  /** Plants stored before the server starts. */
  prefill: number;
  /** Storage for this copy of our server: a fresh database of its own. */
  backend: string;
  /** Part of the default run (not asked for): left out, with a note, when it cannot be reached. */
  optional?: boolean;
  /** Another build of the server to run instead of the workspace's (`--compare-bin`). */
  bin?: string;
  /** Authenticate an issued `ps_` token or an HS256 JWT instead of a PLANTSTORE_TOKENS token (`--auth`). */
  auth?: "opaque" | "jwt";
  /**
   * The durable floor beside this variant of ours (`floorOf` names it), on a database of its own
   * configured alike: it runs the workspace's store, so the workspace's server migrates it.
   */
  floorOf?: string;
};

export type BenchOptions = {
  scenario: Scenario;
  /** Seconds per measured round (the soak's whole length). */
  duration: number;
  /** Responses per measured round instead of a duration (e.g. a million, for peak RSS). */
  requests: number | undefined;
  rounds: number;
  connections: number;
  /** Seconds of load per target before the first round; not measured, but checked for errors. */
  warmup: number;
  /** Every backend some variant uses, in order (the first is the headline). */
  backends: string[];
  variants: Variant[];
  ids: IdMode;
  /** Page size of the list scenario. */
  limit: number;
  /** Soak: requests per second; unset means rateFraction of a measured maximum. */
  rate: number | undefined;
  rateFraction: number;
  /** Soak: seconds per reported interval. */
  interval: number;
  /** Feed: streams open on GET /plants/events while plants are created at `rate`. */
  subscribers: number;
  /**
   * wrk unless asked otherwise; autocannon for the soak, which needs a fixed rate wrk cannot hold.
   * The feed drives its own requests (feed-process.ts) and uses neither.
   */
  loadGenerator: LoadGeneratorName;
  /** Pin server and load generator to different CPUs with taskset, when there are two or more. */
  pin: boolean;
  /** Profile our server (node --cpu-prof) and print its top costs. */
  cpuProf: boolean;
  /**
   * `static`: our server with a PLANTSTORE_TOKENS token (the default). `opaque` / `jwt`: also a
   * copy of our server, measured in the same alternating rounds, authenticated with an issued
   * `ps_` token or an HS256 JWT, so the cost of that authentication is a side-by-side ratio.
   */
  auth: Auth;
  smoke: boolean;
  /** Where the JSON goes; default bench/results/<timestamp>.json. */
  out: string | undefined;
};

export const USAGE = `Usage: pnpm bench [options]

  --scenario <s>        insert (default): POST /plants, every request a new id, beside its floor
                        (unless --durability, --workers, --prefill or --auth make it a comparison of ours)
                        list: GET /plants?limit=100&after=<random cursor> from a prefilled store
                        read: GET /plants/{random prefilled id}, beside its floor
                        update: PATCH /plants/{id} with If-Match, renaming prefilled plants,
                        beside its floor
                        soak: steady POST /plants load at a fixed rate, reported per interval
                        feed: creations at --rate with and without --subscribers on GET /plants/events
  --duration <s>        seconds per round (default 10; soak 300; smoke 1, soak smoke 4)
  --requests <n>        responses per round instead of a duration (e.g. 1000000 for peak RSS)
  --rounds <n>          alternating rounds per target (default 3; smoke 1)
  --connections <n>     concurrent connections (default 32; smoke 4)
  --warmup <s>          warm-up seconds per target (default 3; smoke 1)
  --backend <b,...>     storage for our server: ${BACKEND_NAMES.join(", ")} (postgres: a scratch database);
                        default sqlite,postgres for a plain insert run (postgres left out when
                        unreachable), sqlite otherwise
  --durability <d,...>  full | normal, passed as PLANTSTORE_DURABILITY (default full)
  --workers <n,...>     passed as PLANTSTORE_WORKERS (default: unset, i.e. 1)
  --prefill <n,...>     plants stored before the server starts (default 0; list 1000000, read and
                        update 100000; their smokes 2000, 200, 200)
  --ids <mode>          sequential (default) | random: the ids of inserted and prefilled plants
  --limit <n>           list page size (default 100)
  --rate <n>            soak: requests per second (default: --rate-fraction of a measured maximum);
                        feed: creations per second (default 500; smoke 50)
  --subscribers <n>     feed: open streams (default 1000; smoke 20)
  --rate-fraction <f>   soak: share of the measured maximum (default 0.7)
  --interval <s>        soak: seconds per reported interval (default 10; smoke 1)
  --load-generator <g>  wrk (default) | autocannon. wrk costs the load CPU a fraction of what
                        autocannon does per request, and counts statuses only; autocannon also
                        checks every answer's body. The soak always runs autocannon (wrk holds no
                        fixed rate); the feed sends its own requests. wrk is installed with apt-get
                        when missing (scripts/wrk.sh)
  --no-pin              do not pin server and load generator to separate CPUs
  --cpu-prof            profile our server (node --cpu-prof) and print its top costs
  --auth <kind>         static (default) | opaque | jwt: also measure our server authenticating
                        an issued token or a JWT (target ours-<kind>), beside the static-token one
  --compare-bin <path>  also run this build of the server (its dist/bin.js) as target "compare",
                        configured like the first of ours: two commits side by side in one run;
                        repeat it for several builds (targets compare-1, compare-2, ...)
  --smoke               a short run proving the harness works
  --out <file>          write the JSON here instead of bench/results/<timestamp>.json
  --help                show this text

Options marked <x,...> take a comma-separated list: every combination becomes a target of its
own, measured side by side in the same run (e.g. --durability full,normal --prefill 0,5000000).`;

export class UsageError extends Error {}

/** Plants an update job patches: twice the connections, so a plant is always free (scenarios.ts, buildUpdate). */
export const updatePlants = (connections: number) => 2 * connections;

function integer(name: string, raw: string, min: number): number {
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min)
    throw new UsageError(`--${name} must be an integer >= ${min}, got ${raw}`);
  return value;
}

function positiveInt(name: string, raw: string | undefined, fallback: number, min = 1): number {
  return raw === undefined ? fallback : integer(name, raw, min);
}

function list<T>(name: string, raw: string | undefined, fallback: T[], parse: (item: string) => T): T[] {
  if (raw === undefined) return fallback;
  const items = raw.split(",").map((item) => item.trim());
  if (items.some((item) => item.length === 0)) throw new UsageError(`--${name} has an empty item: ${raw}`);
  const values = items.map(parse);
  if (new Set(values).size !== values.length) throw new UsageError(`--${name} lists a value twice: ${raw}`);
  return values;
}

/** Returns undefined for --help. Smoke only changes defaults, so `--smoke --connections 8` still works. */
export function parseOptions(argv: string[]): BenchOptions | undefined {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
      strict: true,
      options: {
        scenario: { type: "string" },
        duration: { type: "string" },
        requests: { type: "string" },
        rounds: { type: "string" },
        connections: { type: "string" },
        warmup: { type: "string" },
        backend: { type: "string" },
        durability: { type: "string" },
        workers: { type: "string" },
        prefill: { type: "string" },
        ids: { type: "string" },
        limit: { type: "string" },
        rate: { type: "string" },
        "rate-fraction": { type: "string" },
        interval: { type: "string" },
        subscribers: { type: "string" },
        "load-generator": { type: "string" },
        "no-pin": { type: "boolean", default: false },
        "cpu-prof": { type: "boolean", default: false },
        "compare-bin": { type: "string", multiple: true },
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
  const scenario = values.scenario ?? "insert";
  if (
    scenario !== "insert" &&
    scenario !== "list" &&
    scenario !== "read" &&
    scenario !== "update" &&
    scenario !== "soak" &&
    scenario !== "feed"
  ) {
    throw new UsageError(`--scenario must be insert, list, read, update, soak or feed, got ${scenario}`);
  }
  const byId = scenario === "read" || scenario === "update";
  // The plain insert run reports both backends beside the baseline; anything that multiplies
  // targets or measures something else (smoke, lists, soak, durability, workers, prefill, auth) keeps to SQLite.
  const plainInsert =
    scenario === "insert" &&
    !smoke &&
    [values.durability, values.workers, values.prefill, values.auth].every((v) => v === undefined);
  const backendsImplicit = values.backend === undefined;
  const backends = list("backend", values.backend, plainInsert ? ["sqlite", "postgres"] : ["sqlite"], (b) => {
    if (!BACKEND_NAMES.includes(b))
      throw new UsageError(`--backend must be one of ${BACKEND_NAMES.join(", ")}, got ${b}`);
    return b;
  });
  const ids = values.ids ?? "sequential";
  if (ids !== "sequential" && ids !== "random") throw new UsageError(`--ids must be sequential or random, got ${ids}`);
  if ((scenario === "list" || byId) && ids !== "sequential") {
    throw new UsageError(`--scenario ${scenario} needs --ids sequential: it reads ids 1..prefill`);
  }

  const durabilities = list<Durability>("durability", values.durability, ["full"], (d) => {
    if (d !== "full" && d !== "normal") throw new UsageError(`--durability must be full or normal, got ${d}`);
    return d;
  });
  const workers = list<number | undefined>("workers", values.workers, [undefined], (w) => integer("workers", w, 1));
  const defaultPrefill = scenario === "list" ? (smoke ? 2_000 : 1_000_000) : byId ? (smoke ? 200 : 100_000) : 0;
  const prefills = list("prefill", values.prefill, [defaultPrefill], (p) => integer("prefill", p, 0));
  const limit = positiveInt("limit", values.limit, 100);
  if (scenario === "list" && prefills.some((p) => p < limit)) {
    throw new UsageError(`--scenario list needs --prefill of at least --limit (${limit}) plants`);
  }
  const connections = positiveInt("connections", values.connections, smoke ? 4 : 32);
  if (scenario === "update" && prefills.some((p) => p < updatePlants(connections))) {
    throw new UsageError(
      `--scenario update needs --prefill of at least twice --connections (${updatePlants(connections)} plants)`,
    );
  }
  if (byId && prefills.some((p) => p < 1)) throw new UsageError(`--scenario ${scenario} needs a prefilled store`);
  if (scenario === "soak" && backends.length * durabilities.length * workers.length * prefills.length > 1) {
    throw new UsageError("--scenario soak runs one configuration of our server; give single values");
  }

  const variants: Variant[] = [];
  for (const backend of backends) {
    // Durability is SQLite's setting; PostgreSQL always commits with synchronous_commit=on.
    for (const durability of backend === "sqlite" ? durabilities : durabilities.slice(0, 1)) {
      for (const worker of workers) {
        for (const prefill of prefills) {
          const differs = [
            backends.length > 1 ? `backend=${backend}` : "",
            durabilities.length > 1 && backend === "sqlite" ? `durability=${durability}` : "",
            workers.length > 1 ? `workers=${worker ?? "default"}` : "",
            prefills.length > 1 ? `prefill=${prefill}` : "",
          ].filter((part) => part.length > 0);
          variants.push({
            name: differs.length === 0 ? "ours" : `ours[${differs.join(",")}]`,
            durability,
            workers: worker,
            prefill,
            backend,
            ...(backendsImplicit && backend !== "sqlite" ? { optional: true } : {}),
          });
        }
      }
    }
  }

  const auth = values.auth ?? "static";
  if (auth !== "static" && auth !== "opaque" && auth !== "jwt")
    throw new UsageError(`--auth must be static, opaque or jwt, got ${auth}`);
  if (auth !== "static") {
    if (backends.length > 1) throw new UsageError("--auth compares against one backend; give a single --backend");
    if (scenario === "soak" || scenario === "feed") throw new UsageError("--auth needs the insert or list scenario");
    variants.push({ ...variants[0]!, name: `ours-${auth}`, auth });
  }
  // Each of ours beside its floor, configured alike, so the ratio comes from one run. An
  // insert run does so unless it compares configurations of ours that the floor (one process,
  // durability full, an empty store) does not have.
  const insertFloor =
    scenario === "insert" &&
    [values.durability, values.workers, values.prefill, values.auth].every((v) => v === undefined);
  if (byId || insertFloor) {
    for (const variant of variants.filter((v) => v.auth === undefined)) {
      variants.push({
        ...variant,
        name: variant.name.replace(/^ours/, "floor"),
        bin: DURABLE_FLOOR,
        floorOf: variant.name,
      });
    }
  }
  const compareBins = values["compare-bin"] ?? [];
  if (compareBins.length > 0 && (scenario === "soak" || scenario === "feed"))
    throw new UsageError("--compare-bin needs the insert or list scenario");
  // One build keeps the plain name "compare"; several are told apart by their position.
  compareBins.forEach((bin, i) =>
    variants.push({ ...variants[0]!, name: compareBins.length === 1 ? "compare" : `compare-${i + 1}`, bin }),
  );

  const rateFraction = values["rate-fraction"] === undefined ? 0.7 : Number(values["rate-fraction"]);
  if (!(rateFraction > 0 && rateFraction <= 1))
    throw new UsageError(`--rate-fraction must be in (0, 1], got ${values["rate-fraction"]}`);
  const soak = scenario === "soak";
  const loadGenerator = values["load-generator"] ?? (soak ? "autocannon" : "wrk");
  if (loadGenerator !== "wrk" && loadGenerator !== "autocannon")
    throw new UsageError(`--load-generator must be wrk or autocannon, got ${loadGenerator}`);
  if (soak && loadGenerator === "wrk")
    throw new UsageError("--scenario soak needs a fixed request rate, which wrk cannot hold: it runs autocannon");
  return {
    scenario,
    duration: positiveInt("duration", values.duration, soak ? (smoke ? 4 : 300) : smoke ? 1 : 10),
    requests: values.requests === undefined ? undefined : integer("requests", values.requests, 1),
    rounds: positiveInt("rounds", values.rounds, smoke ? 1 : 3),
    connections,
    // Smoke 1 s, not 0: a server measured cold while other runs share the machine answered none of
    // its first requests within a 1 s round (its numbers then rightly fail the run).
    warmup: positiveInt("warmup", values.warmup, smoke ? 1 : 3, 0),
    backends,
    variants,
    ids,
    limit,
    rate:
      values.rate === undefined
        ? scenario === "feed"
          ? smoke
            ? 50
            : 500
          : undefined
        : integer("rate", values.rate, 1),
    rateFraction,
    interval: positiveInt("interval", values.interval, smoke ? 1 : 10),
    subscribers: positiveInt("subscribers", values.subscribers, smoke ? 20 : 1000),
    loadGenerator,
    pin: !values["no-pin"],
    cpuProf: values["cpu-prof"],
    auth,
    smoke,
    out: values.out,
  };
}
