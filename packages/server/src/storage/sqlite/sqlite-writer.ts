import { parentPort, workerData } from "node:worker_threads";

import { PlantETags } from "../plant-etag.ts";
import { createBatchCommitter } from "./batch-committer.ts";
import { openConnection } from "./open-connection.ts";
import type { BatchRequest, CloseRequest, WriterInit } from "./writer-protocol.ts";

/**
 * The single SQLite writer, on its own thread: `node:sqlite` is synchronous, so a commit's fsync
 * would otherwise stall the event loop for every request in flight. Here it stalls only this
 * thread, while the main thread goes on reading and validating the next batch.
 */
const init = workerData as WriterInit;
const db = openConnection({
  path: init.path,
  busyTimeoutMs: init.busyTimeoutMs,
  synchronous: init.synchronous,
  readBigInts: true,
});
const commit = createBatchCommitter(db, new PlantETags(init.etagSecret));

parentPort!.on("message", (message: BatchRequest | CloseRequest) => {
  if (message.kind === "close") {
    db.close();
    parentPort!.close();
    return;
  }
  parentPort!.postMessage(commit(message));
});
