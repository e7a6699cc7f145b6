import { execFileSync } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { availableParallelism } from "node:os";

/**
 * Where each process runs, and how much CPU it used. The reference numbers pinned the
 * server to one core and the load generator to another; on a 2-core machine an unpinned load
 * generator steals the server's core and makes the cheap baseline look slower than it is.
 */
export type CpuPlan = {
  /** Whether `taskset` is used at all (it is missing on some systems, and `--no-pin` turns it off). */
  pinned: boolean;
  /** CPUs this process may use (from /proc/self/status), e.g. [0, 1]. */
  allowed: number[];
  /** For a single-process server (our server with one worker, and the baseline). */
  server: number[];
  /** For a server with several worker processes: every CPU, shared with the load generator. */
  multiProcessServer: number[];
  /** The load generator, and this harness while it waits. */
  load: number[];
  /** Why pinning is off, when it is. */
  note: string;
};

function parseCpuList(list: string): number[] {
  const cpus: number[] = [];
  for (const part of list.trim().split(",")) {
    const [from, to] = part.split("-").map(Number);
    if (from === undefined || Number.isNaN(from)) continue;
    for (let cpu = from; cpu <= (to ?? from); cpu++) cpus.push(cpu);
  }
  return cpus;
}

function allowedCpus(): number[] {
  try {
    const list = /^Cpus_allowed_list:\s*(\S+)/m.exec(readFileSync("/proc/self/status", "utf8"))?.[1];
    if (list !== undefined) return parseCpuList(list);
  } catch {
    // Not Linux: fall through.
  }
  return Array.from({ length: availableParallelism() }, (_, i) => i);
}

function hasTaskset(): boolean {
  try {
    execFileSync("taskset", ["-p", String(process.pid)], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}

export function planCpus(pin: boolean): CpuPlan {
  const allowed = allowedCpus();
  const unpinned = (note: string): CpuPlan => ({
    pinned: false,
    allowed,
    server: allowed,
    multiProcessServer: allowed,
    load: allowed,
    note,
  });
  if (!pin) return unpinned("pinning turned off (--no-pin)");
  if (allowed.length < 2) return unpinned(`only ${allowed.length} CPU available`);
  if (!hasTaskset()) return unpinned("taskset not found (util-linux)");
  // The last CPU drives the load; a single-process server gets the first, as in the setup.
  // With more than two CPUs the server side gets all but the load generator's.
  const load = [allowed.at(-1)!];
  const rest = allowed.slice(0, -1);
  return {
    pinned: true,
    allowed,
    server: allowed.length === 2 ? [allowed[0]!] : rest,
    multiProcessServer: allowed.length === 2 ? allowed : rest,
    load,
    note: "",
  };
}

/** `taskset -c <cpus>` in front of a command when pinning, else the command as is. */
export function pinnedCommand(plan: CpuPlan, cpus: number[], command: string, args: string[]): [string, string[]] {
  if (!plan.pinned || cpus.length === plan.allowed.length) return [command, args];
  return ["taskset", ["-c", cpus.join(","), command, ...args]];
}

/** Moves this harness onto the load generator's CPU, so its own small work stays off the server's. */
export function pinSelf(plan: CpuPlan): void {
  if (!plan.pinned) return;
  try {
    execFileSync("taskset", ["-a", "-p", "-c", plan.load.join(","), String(process.pid)], { stdio: "ignore" });
  } catch {
    // Best effort: the measurement is still valid, only a little noisier.
  }
}

let clockTicks: number | undefined;
/** The kernel's clock ticks per second, the unit of CPU times in /proc. */
export function ticksPerSecond(): number {
  if (clockTicks === undefined) {
    try {
      clockTicks = Number(execFileSync("getconf", ["CLK_TCK"], { encoding: "utf8" }).trim()) || 100;
    } catch {
      clockTicks = 100;
    }
  }
  return clockTicks;
}

/** Fields after the command name in /proc/<pid>/stat (the name may hold spaces and parentheses). */
function statFields(path: string): string[] {
  const stat = readFileSync(path, "utf8");
  return stat.slice(stat.lastIndexOf(")") + 2).split(" ");
}

/**
 * The pid and all its descendants (a clustered server's workers). Found by parent pid in
 * /proc/<pid>/stat, because /proc/<pid>/task/<tid>/children is missing on some kernels.
 */
export function processTree(root: number): number[] {
  const parentOf = new Map<number, number>();
  for (const entry of readdirSync("/proc")) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      parentOf.set(Number(entry), Number(statFields(`/proc/${entry}/stat`)[1]));
    } catch {
      // The process ended between listing and reading.
    }
  }
  const tree = [root];
  for (let i = 0; i < tree.length; i++) {
    for (const [pid, parent] of parentOf) if (parent === tree[i]) tree.push(pid);
  }
  return tree;
}

/** CPU seconds (user + system, all threads) used so far by a process tree; 0 where /proc is missing. */
export function treeCpuSeconds(root: number): number {
  let ticks = 0;
  let tree: number[];
  try {
    tree = processTree(root);
  } catch {
    return 0;
  }
  for (const pid of tree) {
    try {
      const fields = statFields(`/proc/${pid}/stat`);
      // utime and stime are fields 14 and 15 of stat, 12 and 13 after the name.
      ticks += Number(fields[11]) + Number(fields[12]);
    } catch {
      // Gone since listed.
    }
  }
  return ticks / ticksPerSecond();
}

/** CPU seconds per thread name of one process, e.g. the main thread vs the SQLite writer. */
export function threadCpuSeconds(pid: number): Record<string, number> {
  const byName: Record<string, number> = {};
  try {
    for (const tid of readdirSync(`/proc/${pid}/task`)) {
      try {
        const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim();
        const fields = statFields(`/proc/${pid}/task/${tid}/stat`);
        byName[name] = (byName[name] ?? 0) + (Number(fields[11]) + Number(fields[12])) / ticksPerSecond();
      } catch {
        // The thread ended.
      }
    }
  } catch {
    // Not Linux, or the process is gone.
  }
  return byName;
}

/** Busy CPU seconds of the whole machine so far (all CPUs, from /proc/stat), and the CPU count. */
export function machineBusySeconds(): { busy: number; cpus: number } {
  try {
    const text = readFileSync("/proc/stat", "utf8");
    const [, ...values] = text.slice(0, text.indexOf("\n")).trim().split(/\s+/);
    // user nice system idle iowait irq softirq steal guest guest_nice; guest time is already in user.
    const [user, nice, system, , , irq, softirq, steal] = values.map(Number);
    const cpus = (text.match(/^cpu\d+ /gm) ?? []).length;
    return { busy: (user! + nice! + system! + irq! + softirq! + steal!) / ticksPerSecond(), cpus };
  } catch {
    return { busy: 0, cpus: availableParallelism() };
  }
}

export function loadAverage(): number[] {
  try {
    return readFileSync("/proc/loadavg", "utf8").split(" ").slice(0, 3).map(Number);
  } catch {
    return [];
  }
}
