import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { cpus, tmpdir, totalmem } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

import { authSetup } from "./auth-target.ts";
import { type Backend, openBackend } from "./backends.ts";
import { type CpuPlan, loadAverage, pinSelf, planCpus } from "./cpu.ts";
import { type FeedTargetReport, formatFeed, runFeed } from "./feed.ts";
import { LoadGenerator, type LoadJob, type LoadResult } from "./load.ts";
import { measuredRun } from "./measure.ts";
import { type BenchOptions, parseOptions, updatePlants, USAGE, UsageError, type Variant } from "./options.ts";
import { formatProfile, type ProfileSummary, summarizeProfile } from "./profile-summary.ts";
import { findFailures, formatTargets, ratios, type RoundResult, summarize, type TargetReport } from "./report.ts";
import { ID_STRIDE, type RequestSpec } from "./scenarios.ts";
import { runSoak } from "./soak.ts";
import { freePort, readRss, startTarget, type Target } from "./target.ts";
import { ensureWrk } from "./wrk-runner.ts";

const BASELINE_SCRIPT = fileURLToPath(new URL("./baseline-server.ts", import.meta.url));
const RESULTS_DIR = fileURLToPath(new URL("../results/", import.meta.url));

type ServerBin = { bin: string; version: string; nodeFlags: string[] };

/**
 * The built bin of the workspace's @plantstore/server, found the way Node would resolve it, and
 * the node flags of its `#!` line: `plantstore-server serve` runs with them, so the bench does too.
 */
function serverBin(): ServerBin {
  const manifestPath = createRequire(import.meta.url).resolve("@plantstore/server/package.json");
  const manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as { version: string; bin: Record<string, string> };
  const bin = resolve(dirname(manifestPath), Object.values(manifest.bin)[0]!);
  if (!existsSync(bin)) {
    throw new UsageError(`${bin} is missing: build the server first (pnpm turbo build --filter=@plantstore/server)`);
  }
  const shebang = readFileSync(bin, "utf8").split("\n", 1)[0] ?? "";
  const nodeFlags = /^#!.*\bnode((?:\s+--\S+)*)\s*$/.exec(shebang)?.[1]?.trim().split(/\s+/).filter(Boolean) ?? [];
  return { bin, version: manifest.version, nodeFlags };
}

function gitCommit(): string | null {
  try {
    return execFileSync("git", ["rev-parse", "--short", "HEAD"], {
      encoding: "utf8",
      stdio: ["ignore", "pipe", "ignore"],
    }).trim();
  } catch {
    return null;
  }
}

const say = (line: string) => process.stdout.write(`${line}\n`);

/**
 * A path given on the command line, relative to where `pnpm bench` was typed: pnpm runs the script
 * in bench/ and says where it came from in INIT_CWD (without it, e.g. `node src/bench.ts`, the cwd).
 */
const fromInvocationDir = (path: string) => resolve(process.env["INIT_CWD"] ?? "", path);

/** Runs `plantstore-server migrate` against a backend, so it can be prefilled before the server starts. */
function migrate(server: ServerBin, env: Record<string, string>): void {
  execFileSync(process.execPath, [server.bin, "migrate"], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
}

/** A backend of the default run that cannot be reached here: its target is left out. */
class BackendUnreachable extends Error {}

type Started = { target: Target; variant: Variant | null; backend: Backend | null; token: string };

async function startOurs(
  options: BenchOptions,
  variant: Variant,
  context: { server: ServerBin; scratch: string; token: string; plan: CpuPlan; profileDir: string | undefined },
): Promise<Started> {
  const dir = join(context.scratch, variant.name.replace(/[^A-Za-z0-9=,-]/g, "_"));
  mkdirSync(dir, { recursive: true });
  let backend: Backend;
  try {
    backend = await openBackend(variant.backend, dir);
  } catch (error) {
    if (variant.optional === true) throw new BackendUnreachable(error instanceof Error ? error.message : String(error));
    throw error;
  }
  try {
    const env: Record<string, string> = {
      ...backend.env,
      PLANTSTORE_TOKENS: context.token,
      PLANTSTORE_DURABILITY: variant.durability,
      // The default level: one access-log line per request is part of what a real deployment pays.
      PLANTSTORE_LOG_LEVEL: "info",
      // The per-token limiter runs for issued tokens and JWTs (its cost is part of theirs), but never refuses here.
      PLANTSTORE_RATE_LIMIT_TOKEN: "100000000/60s",
      ...(variant.workers === undefined ? {} : { PLANTSTORE_WORKERS: String(variant.workers) }),
    };
    const server =
      variant.bin === undefined ? context.server : { ...context.server, bin: fromInvocationDir(variant.bin) };
    if (variant.prefill > 0) {
      if (backend.prefill === undefined) throw new UsageError(`backend ${backend.name} cannot prefill`);
      // A floor, or a reference server given to --compare-bin (a script such as
      // src/floor-observed-server.ts, with no `migrate` command), runs the workspace's store, so the
      // workspace's server knows its migrations. Another build of ours migrates with its own.
      const reference = variant.floorOf !== undefined || variant.bin?.endsWith(".ts") === true;
      migrate(reference ? context.server : server, env);
      const started = performance.now();
      say(`prefill ${variant.name}: ${variant.prefill.toLocaleString("en-US")} plants (${options.ids} ids)`);
      await backend.prefill(variant.prefill, options.ids);
      say(`prefill ${variant.name}: done in ${((performance.now() - started) / 1000).toFixed(1)} s`);
    }
    let token = context.token;
    if (variant.auth !== undefined) {
      // The same server on a database of its own, authenticating an issued token or a JWT.
      env["PLANTSTORE_TOKENS"] = "";
      const setup = authSetup(variant.auth, server.bin, env);
      Object.assign(env, setup.env);
      token = setup.token;
    }
    // Clustered workers share one listening socket, which cannot be "port 0, whichever": pick one.
    const workers = variant.workers ?? 1;
    const target = await startTarget(variant.name, [server.bin, "serve"], env, {
      ...(workers > 1 ? { port: await freePort(), listeners: workers } : {}),
      cpus: { plan: context.plan, cpus: workers > 1 ? context.plan.multiProcessServer : context.plan.server },
      nodeFlags: [
        ...context.server.nodeFlags,
        ...(context.profileDir === undefined
          ? []
          : ["--cpu-prof", `--cpu-prof-dir=${join(context.profileDir, variant.name)}`]),
      ],
    });
    return { target, variant, backend, token };
  } catch (error) {
    await backend.dispose();
    throw error;
  }
}

/** The requests a target gets in one job: fresh ids for inserts, cursors within its prefill for lists. */
function requestSpec(options: BenchOptions, variant: Variant, jobNumber: number): RequestSpec {
  if (options.scenario === "list")
    return { kind: "list", limit: options.limit, maxAfter: variant.prefill - options.limit };
  if (options.scenario === "read") return { kind: "read", maxId: variant.prefill };
  if (options.scenario === "update") return { kind: "update", plants: updatePlants(options.connections) };
  return { kind: "insert", ids: options.ids, idBase: jobNumber * ID_STRIDE };
}

/**
 * Every creation answered 200 must be a plant in the store, new ids only: a check of the answers
 * that holds whatever the load generator (wrk compares no bodies). Requests still in flight when a
 * run ends may be stored unanswered, up to one per connection per run. Ours and the durable floor
 * only: the other reference servers store nothing, or elsewhere.
 */
async function storedCreations(
  options: BenchOptions,
  started: Started[],
  reports: Record<string, TargetReport>,
): Promise<string[]> {
  const failures: string[] = [];
  for (const { target, variant, backend } of started) {
    if (variant === null || backend === null || (variant.bin !== undefined && variant.floorOf === undefined)) continue;
    const report = reports[target.name]!;
    const runs = [...(report.warmup === null ? [] : [report.warmup]), ...report.rounds];
    const answered = variant.prefill + runs.reduce((total, run) => total + run.status200, 0);
    const stored = await backend.countPlants();
    const inFlight = options.connections * runs.length;
    say(`${target.name}: ${stored} plants stored, ${answered} prefilled or answered 200`);
    if (stored < answered || stored > answered + inFlight)
      failures.push(
        `${target.name}: the store holds ${stored} plants, where ${answered} were prefilled or answered 200 (and at most ${inFlight} more in flight)`,
      );
  }
  return failures;
}

/** Which load generator ran, and why when the scenario chose it. */
function generatorNote(options: BenchOptions): string {
  if (options.scenario === "feed") return "none: the feed sends its own creations at --rate (feed-process.ts)";
  if (options.scenario === "soak") return "autocannon (the soak needs a fixed request rate, which wrk cannot hold)";
  return options.loadGenerator === "wrk"
    ? "wrk (statuses counted, bodies not compared; --load-generator autocannon checks every body)"
    : "autocannon (every answer's body checked)";
}

async function bench(options: BenchOptions): Promise<number> {
  const plan = planCpus(options.pin);
  pinSelf(plan);
  const server = serverBin();
  const scratch = mkdtempSync(join(tmpdir(), "plantstore-bench-"));
  const token = randomBytes(24).toString("base64url");
  const startedAt = new Date();
  const stamp = startedAt.toISOString().replace(/[:.]/g, "-");
  const profileDir = options.cpuProf ? join(RESULTS_DIR, `profiles-${stamp}`) : undefined;
  const started: Started[] = [];
  let load: LoadGenerator | undefined;
  let cleaned = false;
  const cleanUp = async () => {
    if (cleaned) return;
    cleaned = true;
    await load?.stop();
    await Promise.all(started.map((s) => s.target.stop()));
    await Promise.all(started.flatMap((s) => (s.backend === null ? [] : [s.backend.dispose()])));
    rmSync(scratch, { recursive: true, force: true });
  };
  // Ctrl-C must not leave servers behind holding ports and CPU.
  const onSignal = () => void cleanUp().finally(() => process.exit(130));
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);

  const loadBefore = loadAverage();
  say(
    plan.pinned
      ? `pinning: servers on cpu ${plan.server.join(",")} (several workers: cpu ${plan.multiProcessServer.join(",")}), load generator on cpu ${plan.load.join(",")}`
      : `pinning: off (${plan.note}); server and load generator share the CPUs`,
  );
  say(`load average before: ${loadBefore.join(" ")}`);
  say(`load generator: ${generatorNote(options)}`);
  try {
    if (options.loadGenerator === "wrk" && options.scenario !== "feed") ensureWrk();
    load = await LoadGenerator.start(plan, options.loadGenerator);
    if (options.scenario !== "soak" && options.scenario !== "feed") {
      const baseline = await startTarget(
        "baseline",
        [BASELINE_SCRIPT],
        { BASELINE_LIST_LIMIT: String(options.limit) },
        { cpus: { plan, cpus: plan.server } },
      );
      started.push({ target: baseline, variant: null, backend: null, token });
    }
    for (const variant of options.variants) {
      try {
        started.push(await startOurs(options, variant, { server, scratch, token, plan, profileDir }));
      } catch (error) {
        if (!(error instanceof BackendUnreachable)) throw error;
        say(
          `${variant.name}: left out, its ${variant.backend} database cannot be reached (${error.message}); --backend sqlite skips it up front`,
        );
      }
    }
    const targets = started.map((s) => s.target);
    let jobs = 0;
    const jobFor = (s: Started, seconds: number, extra: Partial<LoadJob> = {}): Omit<LoadJob, "jobId"> => ({
      url: s.target.url,
      token: s.token,
      connections: options.connections,
      durationSec: seconds,
      spec: requestSpec(options, s.variant ?? options.variants[0]!, ++jobs),
      ...extra,
    });

    const warmups = new Map<string, LoadResult | null>();
    for (const s of started) {
      // The feed scenario warms up with its own creations.
      if (options.warmup === 0 || options.scenario === "feed") {
        warmups.set(s.target.name, null);
        continue;
      }
      say(`warm-up ${s.target.name} (${options.warmup} s)`);
      warmups.set(s.target.name, await load.run(jobFor(s, options.warmup)));
      s.target.assertAlive();
    }

    const report: Record<string, unknown> = {
      startedAt: startedAt.toISOString(),
      scenario: options.scenario,
      options,
      environment: {
        node: process.version,
        platform: `${process.platform}-${process.arch}`,
        cpus: cpus().length,
        cpuModel: cpus()[0]?.model ?? "unknown",
        totalMemMb: Math.round(totalmem() / 1024 / 1024),
        serverVersion: server.version,
        serverNodeFlags: server.nodeFlags,
        gitCommit: gitCommit(),
        pinning: plan,
        loadAverageBefore: loadBefore,
      },
    };
    let failures: string[];
    let table: string;
    let authVsStatic: number | undefined;
    if (options.scenario === "feed") {
      // Each backend in turn: 1,000 streams are too many to keep open on two servers at once.
      const feeds: Record<string, FeedTargetReport> = {};
      failures = [];
      for (const s of started) {
        const feed = await runFeed(options, s.target, s.token, plan, say);
        feeds[s.target.name] = feed.report;
        failures.push(...feed.failures);
      }
      report["feed"] = feeds;
      table = formatFeed(feeds);
    } else if (options.scenario === "soak") {
      const soak = await runSoak(
        options,
        load,
        started[0]!.target,
        (seconds, extra) => jobFor(started[0]!, seconds, extra),
        say,
      );
      report["soak"] = soak.report;
      failures = soak.failures;
      table = soak.table;
    } else {
      // Alternating rounds, so drift on the machine (thermal, other load) hits every target alike.
      const rounds = new Map<string, RoundResult[]>(started.map((s) => [s.target.name, []]));
      for (let round = 1; round <= options.rounds; round++) {
        for (const s of started) {
          const job = jobFor(s, options.duration, options.requests === undefined ? {} : { amount: options.requests });
          const result = await measuredRun(load, s.target, targets, job);
          rounds.get(s.target.name)!.push({ round, ...result });
          say(
            `round ${round}/${options.rounds} ${s.target.name}: ${Math.round(result.requestsPerSec)} req/s, ` +
              `p99 ${result.latencyMs.p99} ms, ${result.status200} x 200, ${result.errors + result.non2xx + result.mismatches} bad, ` +
              `${Math.round((result.serverCpuSec / Math.max(1, result.requests)) * 1e6)} µs CPU/req, ` +
              `load gen ${Math.round((result.clientCpuSec / result.durationSec) * 100)}% CPU, others ${Math.round(result.othersCpuShare * 100)}%`,
          );
        }
      }
      const reports: Record<string, TargetReport> = {};
      for (const s of started) {
        const name = s.target.name;
        reports[name] = summarize(
          s.target.cpus,
          warmups.get(name) ?? null,
          rounds.get(name)!,
          readRss(s.target.pid).peak,
        );
      }
      report["targets"] = reports;
      // Each of ours against its own floor; the others (--compare-bin, --auth), configured like the
      // first of ours, against the first one's floor.
      const floors: Array<readonly [string, string]> = options.variants.flatMap((v) =>
        v.floorOf === undefined ? [] : [[v.floorOf, v.name] as const],
      );
      const firstFloor = floors.find(([ours]) => ours === options.variants[0]!.name)?.[1];
      if (firstFloor !== undefined)
        for (const v of options.variants)
          if (v.floorOf === undefined && (v.bin !== undefined || v.auth !== undefined))
            floors.push([v.name, firstFloor]);
      report["ratios"] = ratios(reports, floors);
      // The headline ratios by name, as earlier versions of this JSON had them.
      const rps = (name: string) => reports[name]?.summary.requestsPerSecMean;
      const share = (a: number | undefined, b: number | undefined) =>
        a === undefined || b === undefined || b === 0 ? undefined : a / b;
      authVsStatic = share(rps(`ours-${options.auth}`), rps("ours"));
      report["ratio"] = {
        requestsPerSec: share(rps(options.variants[0]!.name), rps("baseline")),
        ...(authVsStatic === undefined ? {} : { authVsStatic }),
      };
      failures = findFailures(reports);
      if (options.scenario === "insert" && options.ids === "sequential")
        failures.push(...(await storedCreations(options, started, reports)));
      table = formatTargets(reports, floors);
    }

    const loadAfter = loadAverage();
    (report["environment"] as Record<string, unknown>)["loadAverageAfter"] = loadAfter;
    await cleanUp();

    let profiles: Record<string, ProfileSummary> | undefined;
    if (profileDir !== undefined) {
      profiles = {};
      for (const variant of options.variants) {
        const dir = join(profileDir, variant.name);
        // One file per thread; the main thread (tid 0 in the name) is where requests are served.
        const files = existsSync(dir) ? readdirSync(dir).filter((f) => /\.\d+\.0\.\d+\.cpuprofile$/.test(f)) : [];
        for (const file of files) profiles[`${variant.name} ${file}`] = summarizeProfile(join(dir, file));
      }
      report["profiles"] = { dir: profileDir, summaries: profiles };
    }
    report["finishedAt"] = new Date().toISOString();
    report["ok"] = failures.length === 0;
    report["failures"] = failures;

    const out = options.out === undefined ? join(RESULTS_DIR, `${stamp}.json`) : fromInvocationDir(options.out);
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);

    const what = {
      list: `GET /plants?limit=${options.limit}&after=<random>`,
      read: `GET /plants/{id} (random among the prefilled)`,
      update: `PATCH /plants/{id} with If-Match (${updatePlants(options.connections)} prefilled plants renamed in turn)`,
      insert: `POST /plants (${options.ids} ids)`,
      soak: `POST /plants (${options.ids} ids)`,
      feed: `GET /plants/events x ${options.subscribers} while POST /plants at ${options.rate}/s`,
    }[options.scenario];
    const length =
      options.requests === undefined ? `${options.duration} s` : `${options.requests.toLocaleString("en-US")} requests`;
    say(
      `\n${options.scenario}: ${what}, ${options.connections} connections, ` +
        (options.scenario === "soak" || options.scenario === "feed"
          ? `${options.duration} s`
          : `${options.rounds} x ${length} (warm-up ${options.warmup} s)`) +
        `, ${options.scenario === "feed" ? "" : `load generator ${options.loadGenerator}, `}backend ${[...new Set(started.flatMap((s) => (s.variant === null ? [] : [s.variant.backend])))].join(" and ")}, ${cpus().length} CPUs, ${plan.pinned ? "pinned" : "not pinned"}` +
        `, load average ${loadBefore.join(" ")} before, ${loadAfter.join(" ")} after\n`,
    );
    say(table);
    if (authVsStatic !== undefined) say(`ours-${options.auth}/ours (static token) req/s: ${authVsStatic.toFixed(3)}`);
    if (profiles !== undefined)
      for (const [name, summary] of Object.entries(profiles)) say(`\n${formatProfile(summary, name)}`);
    say(`\nresults: ${out}${profileDir === undefined ? "" : `\nprofiles: ${profileDir}`}`);
    if (failures.length > 0) {
      process.stderr.write(`\nFAILED: these numbers do not measure what they claim:\n  ${failures.join("\n  ")}\n`);
      return 1;
    }
    return 0;
  } finally {
    process.off("SIGINT", onSignal);
    process.off("SIGTERM", onSignal);
    await cleanUp();
  }
}

try {
  const options = parseOptions(process.argv.slice(2));
  if (options === undefined) {
    say(USAGE);
  } else {
    process.exitCode = await bench(options);
  }
} catch (error) {
  process.stderr.write(`bench: ${error instanceof Error ? error.message : String(error)}\n`);
  if (error instanceof UsageError) process.stderr.write(`\n${USAGE}\n`);
  process.exitCode = error instanceof UsageError ? 2 : 1;
}
