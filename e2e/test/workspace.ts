import { type ChildProcess, execFile, spawn } from "node:child_process";
import { once } from "node:events";
import { copyFileSync, existsSync, mkdirSync, readdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { delimiter, dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

/** The repository root. */
export const ROOT = fileURLToPath(new URL("../../", import.meta.url));

export type WorkspacePackage = { dir: string; name: string; version: string; private: boolean };

/** Every package of the workspace folders that hold what we publish (`packages/*`, `apps/*`). */
export function publishablePackages(): WorkspacePackage[] {
  return ["packages", "apps"].flatMap((folder) =>
    readdirSync(join(ROOT, folder), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => {
        const dir = join(ROOT, folder, entry.name);
        const manifest = JSON.parse(readFileSync(join(dir, "package.json"), "utf8")) as Record<string, unknown>;
        return {
          dir,
          name: String(manifest["name"]),
          version: String(manifest["version"]),
          private: manifest["private"] === true,
        };
      })
      .filter((pkg) => !pkg.private),
  );
}

export type RunResult = { code: number | null; stdout: string; stderr: string };

/**
 * Environment for tools we start: our Node first on PATH (so `#!/usr/bin/env node` bins run on it),
 * and no npm_* / PLANTSTORE_* variables inherited from pnpm, turbo or the developer's shell.
 */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const keep = Object.entries(process.env).filter(
    ([name]) =>
      !name.startsWith("PLANTSTORE_") &&
      !(name.toLowerCase().startsWith("npm_") && name.toLowerCase() !== "npm_config_registry"),
  );
  return {
    ...Object.fromEntries(keep),
    PATH: `${dirname(process.execPath)}${delimiter}${process.env["PATH"] ?? ""}`,
    npm_config_update_notifier: "false",
    npm_config_fund: "false",
    npm_config_audit: "false",
    ...extra,
  };
}

/** Runs a command to completion; the caller decides what a non-zero exit means. */
export function run(
  command: string,
  args: readonly string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number },
): Promise<RunResult> {
  return new Promise((resolve, reject) => {
    execFile(
      command,
      args,
      {
        cwd: options.cwd,
        env: options.env ?? cleanEnv(),
        timeout: options.timeoutMs ?? 180_000,
        maxBuffer: 64 * 1024 * 1024,
      },
      (error, stdout, stderr) => {
        if (error !== null && typeof error.code !== "number") {
          const why = error.killed
            ? `was stopped after ${(options.timeoutMs ?? 180_000) / 1000} s`
            : `failed to run: ${error.message}`;
          reject(new Error(`${command} ${args.join(" ")} ${why}\n${stdout}\n${stderr}`));
          return;
        }
        resolve({ code: error === null ? 0 : (error.code as number), stdout, stderr });
      },
    );
  });
}

/** Like `run`, but a non-zero exit is an error that shows the output. */
export async function runOk(
  command: string,
  args: readonly string[],
  options: { cwd: string; env?: NodeJS.ProcessEnv; timeoutMs?: number },
): Promise<string> {
  const result = await run(command, args, options);
  if (result.code !== 0) {
    throw new Error(
      `${command} ${args.join(" ")} exited ${result.code} in ${options.cwd}\n${result.stdout}\n${result.stderr}`,
    );
  }
  return result.stdout;
}

/** Copies the repository as it is, committed changes or not: tracked and new files, never ignored ones. */
export async function copyRepository(destination: string): Promise<void> {
  const files = (
    await runOk("git", ["ls-files", "-z", "--cached", "--others", "--exclude-standard"], { cwd: ROOT })
  ).split("\0");
  for (const file of files.filter((f) => f.length > 0 && existsSync(join(ROOT, f)))) {
    mkdirSync(dirname(join(destination, file)), { recursive: true });
    copyFileSync(join(ROOT, file), join(destination, file));
  }
}

const require = createRequire(import.meta.url);

/** Plain npm, from this package's devDependencies (the Node we run on may come without one). */
export const NPM_CLI = join(dirname(require.resolve("npm/package.json")), "bin", "npm-cli.js");

/** The exact versions the workspace uses, so the scratch project type-checks with the same TypeScript. */
export function installedVersion(name: string): string {
  return (JSON.parse(readFileSync(require.resolve(`${name}/package.json`), "utf8")) as { version: string }).version;
}

/** A started `plantstore-server serve`: its URL once it listens, and a stop that waits for the exit. */
export type ServerProcess = { url: string; child: ChildProcess; output(): string; stop(): Promise<void> };

export async function startServerProcess(
  bin: string,
  options: { cwd: string; env: NodeJS.ProcessEnv },
): Promise<ServerProcess> {
  const child = spawn(bin, ["serve"], { cwd: options.cwd, env: options.env, stdio: ["ignore", "pipe", "pipe"] });
  let output = "";
  const url = await new Promise<string>((resolve, reject) => {
    // eslint-disable-next-line no-restricted-syntax -- a deadline, not a pause: fails the start that never comes
    const timer = setTimeout(() => reject(new Error(`plantstore-server did not start in 30 s:\n${output}`)), 30_000);
    const onData = (chunk: Buffer) => {
      output += chunk.toString("utf8");
      // Complete lines only: the last piece may be half a line.
      for (const line of output.split("\n").slice(0, -1)) {
        if (!line.startsWith("{")) continue;
        const entry = JSON.parse(line) as { msg?: string; url?: string };
        if (entry.msg === "plantstore listening" && entry.url !== undefined) {
          clearTimeout(timer);
          resolve(entry.url);
        }
      }
    };
    child.stdout.on("data", onData);
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")));
    child.on("exit", (code) => {
      clearTimeout(timer);
      reject(new Error(`plantstore-server exited with ${code} before listening:\n${output}`));
    });
  });
  return {
    url,
    child,
    output: () => output,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = once(child, "exit");
      child.kill("SIGTERM");
      await exited;
    },
  };
}
