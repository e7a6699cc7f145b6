import { execFileSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { cpus, tmpdir, totalmem } from "node:os";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { authSetup } from "./auth-target.ts";
import { openBackend, type Backend } from "./backends.ts";
import { runLoad, type LoadResult } from "./load.ts";
import { parseOptions, USAGE, UsageError, type BenchOptions } from "./options.ts";
import { findFailures, formatTable, summarize, type RoundResult, type TargetReport } from "./report.ts";
import { freePort, readRss, sampleRss, startTarget, type Target } from "./target.ts";

const BASELINE_SCRIPT = fileURLToPath(new URL("./baseline-server.ts", import.meta.url));
const RESULTS_DIR = fileURLToPath(new URL("../results/", import.meta.url));

/** The built bin of the workspace's @plantstore/server, found the way Node would resolve it. */
function serverBin(): { bin: string; version: string } {
  const manifestPath = createRequire(import.meta.url).resolve("@plantstore/server/package.json");
  const manifest = JSON.parse(readFileSync(manifestPath, "utf8")) as { version: string; bin: Record<string, string> };
  const bin = resolve(dirname(manifestPath), Object.values(manifest.bin)[0]!);
  if (!existsSync(bin)) {
    throw new UsageError(`${bin} is missing: build the server first (pnpm turbo build --filter=@plantstore/server)`);
  }
  return { bin, version: manifest.version };
}

function gitCommit(): string | null {
  try {
    return execFileSync("git", ["rev-parse", "--short", "HEAD"], { encoding: "utf8", stdio: ["ignore", "pipe", "ignore"] }).trim();
  } catch {
    return null;
  }
}

async function bench(options: BenchOptions): Promise<number> {
  const server = serverBin();
  const scratch = mkdtempSync(join(tmpdir(), "plantstore-bench-"));
  const token = randomBytes(24).toString("base64url");
  const started: Target[] = [];
  const tokens = new Map<string, string>();
  let backend: Backend | undefined;
  let authBackend: Backend | undefined;
  const cleanUp = async () => {
    await Promise.all(started.map((t) => t.stop()));
    await backend?.dispose();
    await authBackend?.dispose();
    rmSync(scratch, { recursive: true, force: true });
  };
  // Ctrl-C must not leave servers behind holding ports and CPU.
  const onSignal = () => void cleanUp().finally(() => process.exit(130));
  process.once("SIGINT", onSignal);
  process.once("SIGTERM", onSignal);

  const startedAt = new Date();
  try {
    backend = await openBackend(options.backend, scratch);
    const ourEnv: Record<string, string> = {
      ...backend.env,
      PLANTSTORE_TOKENS: token,
      PLANTSTORE_DURABILITY: options.durability,
      // info, not warn: the listening line with the URL is logged at info; nothing is logged per request.
      PLANTSTORE_LOG_LEVEL: "info",
      // The per-token limiter runs for issued tokens and JWTs (its cost is part of theirs), but never refuses here.
      PLANTSTORE_RATE_LIMIT_TOKEN: "100000000/60s",
      ...(options.workers === undefined ? {} : { PLANTSTORE_WORKERS: String(options.workers) }),
    };
    started.push(await startTarget("baseline", [BASELINE_SCRIPT], {}));
    // Clustered workers share one listening socket, which cannot be "port 0, whichever": pick one.
    const workers = options.workers ?? 1;
    const ourStart = workers > 1 ? { port: await freePort(), listeners: workers } : {};
    started.push(await startTarget("ours", [server.bin, "serve"], ourEnv, ourStart));
    tokens.set("ours", token);
    if (options.auth !== "static") {
      // The same server on a database of its own, authenticating an issued token or a JWT.
      const authDir = join(scratch, options.auth);
      mkdirSync(authDir);
      authBackend = await openBackend(options.backend, authDir);
      const env = { ...ourEnv, ...authBackend.env, PLANTSTORE_TOKENS: "" };
      const setup = authSetup(options.auth, server.bin, env);
      const authStart = workers > 1 ? { port: await freePort(), listeners: workers } : {};
      started.push(await startTarget(`ours-${options.auth}`, [server.bin, "serve"], { ...env, ...setup.env }, authStart));
      tokens.set(`ours-${options.auth}`, setup.token);
    }
    const load = (target: Target, durationSec: number) =>
      runLoad({ url: target.url, token: tokens.get(target.name) ?? token, connections: options.connections, durationSec });

    const warmups = new Map<string, LoadResult | null>();
    for (const target of started) {
      if (options.warmup === 0) {
        warmups.set(target.name, null);
        continue;
      }
      process.stdout.write(`warm-up ${target.name} (${options.warmup} s)\n`);
      warmups.set(target.name, await load(target, options.warmup));
      target.assertAlive();
    }

    // Alternating rounds, so drift on the machine (thermal, other load) hits both targets alike.
    const rounds = new Map<string, RoundResult[]>(started.map((t) => [t.name, []]));
    for (let round = 1; round <= options.rounds; round++) {
      for (const target of started) {
        const sampler = sampleRss(target.pid);
        let result: LoadResult;
        let maxRss: number;
        try {
          result = await load(target, options.duration);
        } finally {
          ({ maxRss } = sampler.stop());
        }
        target.assertAlive();
        rounds.get(target.name)!.push({ round, ...result, maxRssBytes: maxRss });
        process.stdout.write(
          `round ${round}/${options.rounds} ${target.name.padEnd(8)} ${Math.round(result.requestsPerSec)} req/s, ` +
            `p99 ${result.latencyMs.p99} ms, ${result.status200} x 200, ${result.errors + result.non2xx + result.mismatches} bad\n`,
        );
      }
    }

    const targets: Record<string, TargetReport> = {};
    for (const target of started) {
      targets[target.name] = summarize(warmups.get(target.name) ?? null, rounds.get(target.name)!, readRss(target.pid).peak);
    }
    const baselineRps = targets["baseline"]!.summary.requestsPerSecMean;
    const ratio = baselineRps === 0 ? 0 : targets["ours"]!.summary.requestsPerSecMean / baselineRps;
    const authTarget = targets[`ours-${options.auth}`];
    const oursRps = targets["ours"]!.summary.requestsPerSecMean;
    const authRatio = authTarget === undefined || oursRps === 0 ? undefined : authTarget.summary.requestsPerSecMean / oursRps;
    const failures = findFailures(targets);

    const report = {
      startedAt: startedAt.toISOString(),
      finishedAt: new Date().toISOString(),
      ok: failures.length === 0,
      failures,
      // null rather than undefined, so the file says "server default" instead of dropping the key.
      options: { ...options, workers: options.workers ?? null },
      environment: {
        node: process.version,
        platform: `${process.platform}-${process.arch}`,
        cpus: cpus().length,
        cpuModel: cpus()[0]?.model ?? "unknown",
        totalMemMb: Math.round(totalmem() / 1024 / 1024),
        serverVersion: server.version,
        gitCommit: gitCommit(),
      },
      request: { method: "POST", path: "/plants", body: '{"id":<unique>,"name":"Fern","tag":"fern"}' },
      ratio: { requestsPerSec: ratio, ...(authRatio === undefined ? {} : { authVsStatic: authRatio }) },
      targets,
    };

    const out = options.out ?? join(RESULTS_DIR, `${startedAt.toISOString().replace(/[:.]/g, "-")}.json`);
    mkdirSync(dirname(out), { recursive: true });
    writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);

    process.stdout.write(
      `\nPOST /plants, ${options.connections} connections, ${options.rounds} x ${options.duration} s` +
        ` (warm-up ${options.warmup} s), backend ${backend.name}, durability ${options.durability}` +
        `${options.workers === undefined ? "" : `, workers ${options.workers}`}, ${cpus().length} CPUs\n\n`,
    );
    process.stdout.write(`${formatTable(targets, ratio)}\n`);
    if (authRatio !== undefined) process.stdout.write(`ours-${options.auth}/ours (static token) req/s: ${authRatio.toFixed(3)}\n`);
    process.stdout.write(`results: ${out}\n`);
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
    process.stdout.write(`${USAGE}\n`);
  } else {
    process.exitCode = await bench(options);
  }
} catch (error) {
  process.stderr.write(`bench: ${error instanceof Error ? error.message : String(error)}\n`);
  if (error instanceof UsageError) process.stderr.write(`\n${USAGE}\n`);
  process.exitCode = error instanceof UsageError ? 2 : 1;
}
