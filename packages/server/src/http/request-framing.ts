import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";

import { ApiError } from "../errors.ts";

// RFC 9112 §3.2: uri-host [ ":" port ], where uri-host is an IP literal in brackets or a name
// (which may be empty). No spaces, no userinfo, no path.
const HOST = /^(?:\[[0-9A-Za-z:.%_~-]+\]|[A-Za-z0-9._~!$&'()*+,;=%-]*)(?::[0-9]*)?$/;

/** Why the request's Host header breaks RFC 9112 §3.2, or undefined when it is as the RFC wants it. */
function hostProblem(req: IncomingMessage): string | undefined {
  const values: string[] = [];
  for (let i = 0; i < req.rawHeaders.length; i += 2) {
    const name = req.rawHeaders[i]!;
    if (name.length === 4 && name.toLowerCase() === "host") values.push(req.rawHeaders[i + 1]!);
  }
  if (values.length > 1) return "the request has more than one Host header";
  if (values.length === 0) return req.httpVersion === "1.0" ? undefined : "an HTTP/1.1 request needs a Host header";
  return HOST.test(values[0]!) ? undefined : "the Host header is not a host name or address with an optional port";
}

function refuse(res: ServerResponse, error: ApiError): void {
  const body = JSON.stringify(error.body);
  res.shouldKeepAlive = false;
  res.writeHead(error.status, {
    "Content-Type": "application/json; charset=utf-8",
    "Content-Length": Buffer.byteLength(body),
    Connection: "close",
  });
  res.end(body);
}

/**
 * What RFC 9112 asks of a request's framing and Node's parser lets through, checked before the app
 * sees the request: more than one Host, or none on HTTP/1.1, or one that is no host, is a 400 with
 * the `Error` body (Node's own check, `requireHostHeader`, answers a bare 400 and must be off);
 * an HTTP/1.0 request with Transfer-Encoding is served, then its connection is closed, since its
 * framing cannot be trusted and a request behind it may have been smuggled in (§6.1).
 */
export function checkFraming(handle: RequestListener): RequestListener {
  return (req, res) => {
    const problem = hostProblem(req);
    if (problem !== undefined) {
      refuse(res, new ApiError("BAD_REQUEST", problem));
      return;
    }
    if (req.httpVersion === "1.0" && req.headers["transfer-encoding"] !== undefined) {
      res.shouldKeepAlive = false;
      res.setHeader("Connection", "close");
    }
    handle(req, res);
  };
}
