const PERCENT_ENCODED = /%[0-9A-Fa-f]{2}/g;
// RFC 3986 §2.3.
const UNRESERVED = /^[A-Za-z0-9._~-]$/;

/**
 * The path with percent-encoded unreserved characters decoded (RFC 3986 §6.2.2.2), so
 * `/plants/%36%30` names the same resource as `/plants/60`, as caches and proxies on the way may
 * already treat it. Everything else stays encoded as sent: an encoded `/` or any other reserved
 * character still never splits or joins a segment, and one pass means `%2536` stays `%2536`.
 */
export function decodeUnreserved(path: string): string {
  if (!path.includes("%")) return path;
  return path.replace(PERCENT_ENCODED, (escape) => {
    const char = String.fromCharCode(Number.parseInt(escape.slice(1), 16));
    return UNRESERVED.test(char) ? char : escape;
  });
}
