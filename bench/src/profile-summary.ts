import { readFileSync } from "node:fs";

/**
 * Reads a V8 `.cpuprofile` (from `node --cpu-prof`) and sums self time per function and per
 * package, so the top costs of the hot path can be read without opening DevTools.
 */
type Node = {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  children?: number[];
};
type Profile = { nodes: Node[]; samples: number[]; timeDeltas: number[]; startTime: number; endTime: number };

/** `share` is of the busy (non-idle) time: what a request path costs, whatever the load. */
type ProfileEntry = { name: string; selfMs: number; share: number };
export type ProfileSummary = {
  totalMs: number;
  idleShare: number;
  functions: ProfileEntry[];
  packages: ProfileEntry[];
};

/** `node_modules/.pnpm/koa@3.3.0/node_modules/koa/lib/x.js` becomes `koa`; our sources become `ours:<file>`. */
function packageOf(url: string): string {
  const modules = url.lastIndexOf("/node_modules/");
  if (modules >= 0) {
    const rest = url.slice(modules + "/node_modules/".length).split("/");
    return rest[0]!.startsWith("@") ? `${rest[0]}/${rest[1]}` : rest[0]!;
  }
  if (url.startsWith("node:") || url === "") return url === "" ? "(native/vm)" : "node:internal";
  const file = url.split("/").at(-1) ?? url;
  return url.includes("/packages/") ? `ours:${file}` : file;
}

export function summarizeProfile(path: string, top = 25): ProfileSummary {
  const profile = JSON.parse(readFileSync(path, "utf8")) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  const total = [...selfUs.values()].reduce((a, b) => a + b, 0);
  const functions = new Map<string, number>();
  const packages = new Map<string, number>();
  let idle = 0;
  for (const [id, us] of selfUs) {
    const { functionName, url, lineNumber } = byId.get(id)!.callFrame;
    if (functionName === "(idle)") idle += us;
    const file = url.split("/").at(-1) ?? "";
    const name = url === "" ? functionName : `${functionName || "(anonymous)"} ${file}:${lineNumber + 1}`;
    functions.set(name, (functions.get(name) ?? 0) + us);
    const pkg = url === "" ? functionName : packageOf(url);
    packages.set(pkg, (packages.get(pkg) ?? 0) + us);
  }
  const busy = total - idle;
  const rank = (map: Map<string, number>) =>
    [...map]
      .filter(([name]) => name !== "(idle)")
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => ({ name, selfMs: Math.round(us / 100) / 10, share: busy === 0 ? 0 : us / busy }));
  return {
    totalMs: total / 1000,
    idleShare: total === 0 ? 0 : idle / total,
    functions: rank(functions),
    packages: rank(packages),
  };
}

export function formatProfile(summary: ProfileSummary, title: string): string {
  const pct = (share: number) => `${(share * 100).toFixed(1).padStart(5)}%`;
  const lines = [`${title}: ${Math.round(summary.totalMs)} ms sampled, ${pct(summary.idleShare).trim()} idle`];
  lines.push("  self time by function (share of busy time):");
  for (const f of summary.functions) lines.push(`    ${pct(f.share)}  ${f.name}`);
  lines.push("  self time by package:");
  for (const p of summary.packages) lines.push(`    ${pct(p.share)}  ${p.name}`);
  return lines.join("\n");
}

if (import.meta.main) {
  for (const path of process.argv.slice(2)) process.stdout.write(`${formatProfile(summarizeProfile(path), path)}\n\n`);
}
