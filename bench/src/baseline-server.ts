import Koa from "koa";

import { listenForHarness } from "./listen.ts";
import { INSERT_ANSWER, PLANT_NAME, PLANT_TAG, plantAnswer } from "./scenarios.ts";

/**
 * The floor we compare against: Koa with nothing but reading and parsing the same body. No auth,
 * validation or storage, so the gap to our server is what those cost. Run as its own process so
 * it gets a CPU and an event loop of its own, exactly like our server.
 *
 * For the list scenario it answers a fixed page of the same size and shape as ours; for a plant's
 * path, the plant of that id (GET) or the plant with the parsed body's name (PATCH), and an ETag
 * it never checks.
 */
const limit = Number(process.env["BASELINE_LIST_LIMIT"] ?? 100);
const PAGE = JSON.stringify(Array.from({ length: limit }, (_, i) => ({ id: i + 1, name: PLANT_NAME, tag: PLANT_TAG })));

const ETAG = `"${"b".repeat(27)}"`;
const PLANT_PATH = /^\/plants\/(\d+)$/;

const app = new Koa();
app.use(async (ctx) => {
  const id = PLANT_PATH.exec(ctx.path)?.[1];
  if (id !== undefined && (ctx.method === "GET" || ctx.method === "PATCH")) {
    let name = PLANT_NAME;
    if (ctx.method === "PATCH") {
      const chunks: Buffer[] = [];
      for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
      name = (JSON.parse(Buffer.concat(chunks).toString("utf8")) as { name: string }).name;
    }
    ctx.set("ETag", ETAG);
    ctx.type = "application/json";
    ctx.body = plantAnswer(Number(id), name);
    return;
  }
  if (ctx.path !== "/plants") {
    ctx.status = 404;
    return;
  }
  if (ctx.method === "GET") {
    ctx.type = "application/json";
    ctx.body = PAGE;
    return;
  }
  if (ctx.method !== "POST") {
    ctx.status = 405;
    return;
  }
  const chunks: Buffer[] = [];
  for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
  JSON.parse(Buffer.concat(chunks).toString("utf8"));
  ctx.status = 200;
  ctx.type = "application/json";
  ctx.body = INSERT_ANSWER;
});

listenForHarness(app, "baseline");
