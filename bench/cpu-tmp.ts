import { readFileSync, mkdtempSync, mkdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import autocannon from "autocannon";
import { startTarget } from "./src/target.ts";
import { authSetup } from "./src/auth-target.ts";
const bin = "/work/wt/tokens/packages/server/dist/bin.js";
const scratch = mkdtempSync(join(tmpdir(), "cpu-"));
const kinds = (process.argv[2] ?? "static,opaque,jwt").split(",");
const base = { PLANTSTORE_DURABILITY: "full", PLANTSTORE_LOG_LEVEL: "info", PLANTSTORE_RATE_LIMIT_TOKEN: "100000000/60s" };
const targets: Array<{ name: string; pid: number; url: string; token: string; stop(): Promise<void> }> = [];
for (const kind of kinds) {
  const dir = join(scratch, kind); mkdirSync(dir);
  const env: Record<string, string> = { ...base, DATABASE_URL: `sqlite:${join(dir, "p.db")}`, PLANTSTORE_TOKENS: kind === "static" ? "static-bench-token-0123456789" : "" };
  let token = "static-bench-token-0123456789";
  let extra = {};
  if (kind !== "static") { const s = authSetup(kind as "opaque" | "jwt", bin, env); token = s.token; extra = s.env; }
  const t = await startTarget(kind, [bin, "serve"], { ...env, ...extra });
  targets.push({ ...t, token });
}
const cpu = (pid: number) => { const f = readFileSync(`/proc/${pid}/stat`, "utf8").split(") ")[1]!.split(" "); return (Number(f[11]) + Number(f[12])) * 10_000; }; // µs (100 Hz ticks)
let id = 1;
const results = new Map<string, number[]>();
for (let round = 0; round < Number(process.argv[3] ?? 4); round++) {
  for (const t of targets) {
    const before = cpu(t.pid);
    const r = await autocannon({ url: t.url, connections: 32, amount: 40000, method: "POST",
      headers: { authorization: `Bearer ${t.token}`, "content-type": "application/json" },
      requests: [{ path: "/plants", setupRequest: (req) => { req.body = `{"id":${id++},"name":"Fern","tag":"fern"}`; return req; } }] });
    const used = cpu(t.pid) - before;
    const per = used / r.requests.total;
    if (r.non2xx > 0) console.log("non2xx!", t.name, r.non2xx);
    if (round > 0) (results.get(t.name) ?? results.set(t.name, []).get(t.name)!).push(per);
    console.log(`round ${round + 1} ${t.name.padEnd(7)} ${per.toFixed(1)} µs CPU/request, ${Math.round(r.requests.average)} req/s`);
  }
}
const mean = (a: number[]) => a.reduce((x, y) => x + y, 0) / a.length;
const s = mean(results.get("static") ?? [1]);
for (const [name, v] of results) console.log(`${name}: mean ${mean(v).toFixed(1)} µs CPU/request, ratio to static ${(mean(v) / s).toFixed(3)}`);
await Promise.all(targets.map((t) => t.stop()));
process.exit(0);
