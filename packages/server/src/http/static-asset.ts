import { createHash } from "node:crypto";
import { gzipSync } from "node:zlib";

import type Koa from "koa";

/** A file served from memory, gzipped once, with a weak validator. */
export type StaticAsset = { type: string; body: Buffer; gzip: Buffer; etag: string };

export function staticAsset(type: string, body: Buffer): StaticAsset {
  // Weak: the gzip and identity answers are the same representation, byte-for-byte different.
  const etag = `W/"${createHash("sha256").update(body).digest("base64url").slice(0, 27)}"`;
  return { type, body, gzip: gzipSync(body), etag };
}

/** Answers with `asset`: 304 when the client's copy is fresh, else gzipped when accepted. */
export function answerStaticAsset(ctx: Koa.Context, asset: StaticAsset): void {
  ctx.set("Vary", "Accept-Encoding");
  ctx.etag = asset.etag;
  ctx.status = 200;
  ctx.type = asset.type;
  if (ctx.fresh) {
    ctx.status = 304;
    return;
  }
  if (ctx.acceptsEncodings("gzip", "identity") === "gzip") {
    ctx.set("Content-Encoding", "gzip");
    ctx.body = asset.gzip;
  } else {
    ctx.body = asset.body;
  }
}
