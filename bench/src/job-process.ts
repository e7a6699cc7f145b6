import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";

import { type CpuPlan, pinnedCommand } from "./cpu.ts";

/** What every job process says: ready once, then per job its progress and how it ended. */
type JobMessage = { type: string; jobId?: number; result?: unknown; error?: string };

/**
 * A helper process of the bench (the load generator, the feed's subscribers), pinned to the load
 * CPU and given one job at a time over IPC, so its work never shares the server's core.
 */
export class JobProcess<Job extends { jobId: number }, Message extends JobMessage, Result> {
  readonly #child: ChildProcess;
  readonly #name: string;
  #nextJobId = 1;
  #exited: string | undefined;

  private constructor(child: ChildProcess, name: string) {
    this.#child = child;
    this.#name = name;
    child.on("exit", (code, signal) => (this.#exited = `the ${name} exited with ${signal ?? code}`));
  }

  /** Starts `script` and waits for its `ready`. `name` says which process failed, in errors. */
  static async start<Job extends { jobId: number }, Message extends JobMessage, Result>(
    plan: CpuPlan,
    script: string,
    name: string,
  ): Promise<JobProcess<Job, Message, Result>> {
    const [command, args] = pinnedCommand(plan, plan.load, process.execPath, [script]);
    const child = spawn(command, args, { stdio: ["ignore", "inherit", "inherit", "ipc"] });
    const [message] = (await Promise.race([
      once(child, "message"),
      once(child, "exit").then(() => {
        throw new Error(`the ${name} exited before it was ready`);
      }),
    ])) as [Message];
    if (message.type !== "ready") throw new Error(`the ${name} said ${message.type} first`);
    return new JobProcess(child, name);
  }

  /** Runs one job; `onProgress` gets this job's messages other than its end. */
  run(job: Omit<Job, "jobId">, onProgress?: (message: Message) => void): Promise<Result> {
    if (this.#exited !== undefined) return Promise.reject(new Error(this.#exited));
    const jobId = this.#nextJobId++;
    return new Promise((resolve, reject) => {
      const onMessage = (message: Message) => {
        if (message.jobId !== jobId) return;
        if (message.type === "done" || message.type === "failed") {
          settle();
          if (message.type === "done") resolve(message.result as Result);
          else reject(new Error(`${this.#name}: ${message.error}`));
        } else onProgress?.(message);
      };
      const onExit = () => {
        settle();
        reject(new Error(this.#exited ?? `the ${this.#name} exited`));
      };
      const settle = () => {
        this.#child.off("message", onMessage);
        this.#child.off("exit", onExit);
      };
      this.#child.on("message", onMessage);
      this.#child.once("exit", onExit);
      this.#child.send({ ...job, jobId });
    });
  }

  async stop(): Promise<void> {
    if (this.#child.exitCode !== null || this.#child.signalCode !== null) return;
    const exited = once(this.#child, "exit");
    this.#child.disconnect();
    const timer = setTimeout(() => this.#child.kill("SIGKILL"), 5_000);
    await exited;
    clearTimeout(timer);
  }
}
