import { errorCodeName, ErrorCodes, INT64_MAX, INT64_MIN } from "@plantstore/schema";
import fc from "fast-check";

/**
 * The invariants every answer to hostile input keeps: never a 5xx, and every non-2xx is exactly
 * the `Error` body (`application/json`, keys `error` and `message` only) with a catalogued code
 * whose status is the answer's status. Returns what is wrong, or undefined.
 */
export function answerProblem(
  method: string,
  status: number,
  headers: Record<string, string | string[] | undefined>,
  text: string,
): string | undefined {
  if (!Number.isInteger(status) || status < 100) return `no status line (${status})`;
  if (status >= 500) return `a ${status}: ${text}`;
  if (status < 300 || method === "HEAD") return undefined;
  const contentType = String(headers["content-type"] ?? "");
  if (!/^application\/json\b/.test(contentType)) return `${status} with Content-Type ${contentType}: ${text}`;
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    return `${status} with a body that is not JSON: ${text}`;
  }
  if (typeof body !== "object" || body === null || Array.isArray(body))
    return `${status} body is not an object: ${text}`;
  const keys = Object.keys(body).sort().join(",");
  if (keys !== "error,message") return `${status} body has keys ${keys}: ${text}`;
  const { error, message } = body as { error: unknown; message: unknown };
  const name = typeof error === "number" ? errorCodeName(error) : undefined;
  if (name === undefined) return `${status} with an uncatalogued code ${String(error)}`;
  if (ErrorCodes[name].status !== status)
    return `${status} with code ${String(error)}, which belongs to ${ErrorCodes[name].status}`;
  if (typeof message !== "string" || message.length === 0) return `${status} with an empty message`;
  return undefined;
}

/** Names a fast-check run may shrink toward; odd but storable text. */
const oddText = fc.oneof(
  fc.string({ minLength: 1, maxLength: 20 }),
  fc.string({ minLength: 1, maxLength: 20, unit: "binary" }),
  fc.constantFrom(
    "é",
    "🌿",
    "\u200f\u202e",
    "e\u0301",
    "\ufeff",
    "\uffff",
    "\ud83c\udf3f",
    "a".repeat(256),
    "多肉植物",
  ),
);

/** Any int64, with the edges and the region above 2^53 well represented. */
const int64 = fc.oneof(
  fc.bigInt({ min: INT64_MIN, max: INT64_MAX }),
  fc.constantFrom(INT64_MIN, INT64_MAX, 0n, -1n, 2n ** 53n, 2n ** 53n + 1n, -(2n ** 53n) - 1n),
);

export type PlantFields = { id: bigint; name: string; tag: string | undefined };

/** A valid NewPlant's fields (what the schema accepts): any int64, 1–256 / 1–64 well-formed chars without U+0000. */
const validPlant: fc.Arbitrary<PlantFields> = fc.record({
  id: int64,
  name: oddText.filter((s) => s.length <= 256 && s.isWellFormed() && !s.includes("\u0000")),
  tag: fc.option(
    oddText.filter((s) => s.length <= 64 && s.isWellFormed() && !s.includes("\u0000")),
    { nil: undefined },
  ),
});

/** Extra members that must be ignored (never stored, never echoed), prototype-ish ones included. */
const extraMembers = fc.array(
  fc.tuple(
    fc.oneof(
      fc.constantFrom("__proto__", "constructor", "prototype", "toString", "hasOwnProperty", "valueOf", "password"),
      fc.string({ maxLength: 10 }),
    ),
    fc.oneof(
      fc.json({ maxDepth: 2 }),
      fc.constantFrom('{"id":1,"name":"x"}', '{"prototype":{"name":"polluted"}}', "null"),
    ),
  ),
  { maxLength: 4 },
);

/** The JSON text of a valid plant, members in any order, with ignored extra members around them. */
export const validPlantBody: fc.Arbitrary<{ plant: PlantFields; body: string }> = fc
  .tuple(validPlant, extraMembers, fc.boolean())
  .map(([plant, extras, extrasFirst]) => {
    const own = [`"id":${plant.id}`, `"name":${JSON.stringify(plant.name)}`];
    if (plant.tag !== undefined) own.push(`"tag":${JSON.stringify(plant.tag)}`);
    // Extras never reuse our own keys here, nor one another's: a name twice makes the body one the
    // server refuses, and duplicates are exercised on their own below.
    const others = extras
      .filter(([key], i) => !["id", "name", "tag"].includes(key) && extras.findIndex(([other]) => other === key) === i)
      .map(([key, value]) => `${JSON.stringify(key)}:${value}`);
    const members = extrasFirst ? [...others, ...own] : [...own, ...others];
    return { plant, body: `{${members.join(",")}}` };
  });

const numberLiterals = fc.oneof(
  fc.constantFrom(
    "1e400",
    "-1e400",
    "9223372036854775808",
    "-9223372036854775809",
    "99999999999999999999999999999999",
    "-0",
    "0.0",
    "1.0",
    "1e3",
    "1E+2",
    "0x10",
    "01",
    "+1",
    ".5",
    "NaN",
    "Infinity",
    "-Infinity",
    "1_000",
    "١٢",
    '"7"',
    "true",
    "null",
    "[]",
    "{}",
  ),
  fc.double().map((d) => (Number.isFinite(d) ? String(d) : "0")),
  fc.bigInt().map(String),
  fc.stringMatching(/^-?[0-9]{19,400}$/),
);

/** Bytes that are not what they claim: invalid, overlong or surrogate UTF-8, BOMs, other encodings. */
const oddBytes = fc.constantFrom(
  Buffer.from([0xc0, 0xaf]), // overlong "/"
  Buffer.from([0xe0, 0x80, 0xaf]), // overlong, three bytes
  Buffer.from([0xed, 0xa0, 0x80]), // a UTF-16 surrogate encoded as UTF-8 (CESU-8)
  Buffer.from([0xf4, 0x90, 0x80, 0x80]), // above U+10FFFF
  Buffer.from([0xff, 0xfe]), // a UTF-16 BOM
  Buffer.from([0xef, 0xbb, 0xbf]), // the UTF-8 BOM
  Buffer.from([0x00]),
  Buffer.from([0x80]),
);

function bytesOf(text: string): Buffer {
  return Buffer.from(text, "utf8");
}

/** Hostile POST /plants bodies, as bytes. */
export const hostileBody: fc.Arbitrary<Buffer> = fc.oneof(
  // Any JSON at all, with strings of every code unit.
  fc.json({ maxDepth: 4 }).map(bytesOf),
  fc.json({ maxDepth: 3, stringUnit: "binary" }).map(bytesOf),
  fc.jsonValue({ maxDepth: 3 }).map((v) => bytesOf(JSON.stringify(v) ?? "null")),
  // Random bytes.
  fc.uint8Array({ maxLength: 300 }).map((a) => Buffer.from(a)),
  // A valid plant, one byte changed.
  fc.tuple(validPlantBody, fc.nat(), fc.integer({ min: 0, max: 255 })).map(([{ body }, at, byte]) => {
    const bytes = bytesOf(body);
    bytes[at % bytes.length] = byte;
    return bytes;
  }),
  // A valid plant, cut short.
  fc.tuple(validPlantBody, fc.nat()).map(([{ body }, at]) => bytesOf(body.slice(0, at % body.length))),
  // Odd bytes spliced in.
  fc.tuple(validPlantBody, fc.nat(), oddBytes).map(([{ body }, at, odd]) => {
    const bytes = bytesOf(body);
    const cut = at % (bytes.length + 1);
    return Buffer.concat([bytes.subarray(0, cut), odd, bytes.subarray(cut)]);
  }),
  // Huge, tiny and non-numbers where the id goes.
  fc.tuple(numberLiterals, oddText).map(([id, name]) => bytesOf(`{"id":${id},"name":${JSON.stringify(name)}}`)),
  // Deep nesting, as the whole body or inside an ignored member (within the 16 KiB limit).
  fc.tuple(fc.integer({ min: 1, max: 8_000 }), fc.constantFrom("[", '{"a":')).map(([depth, open]) => {
    const close = open === "[" ? "]" : "}";
    return bytesOf(`{"id":1,"name":"deep","x":${open.repeat(depth)}1${close.repeat(depth)}}`);
  }),
  fc.integer({ min: 1, max: 16_000 }).map((depth) => bytesOf("[".repeat(depth) + "]".repeat(depth))),
  // Huge strings: over the length limits, and over the body limit.
  fc.integer({ min: 257, max: 15_000 }).map((n) => bytesOf(`{"id":2,"name":"${"n".repeat(n)}"}`)),
  fc.integer({ min: 16_385, max: 40_000 }).map((n) => bytesOf(`{"id":3,"name":"x","pad":"${"p".repeat(n)}"}`)),
  // Lone surrogates and NUL, escaped and raw.
  fc
    .constantFrom(
      '"\\ud800"',
      '"\\udfff"',
      '"a\\ud83c"',
      '"\\u0000"',
      '"a\\u0000b"',
      '"\u0000"',
      '"\ud800"',
      '"\\uDEAD\\uBEEF"',
    )
    .map((name) => bytesOf(`{"id":4,"name":${name},"tag":${name}}`)),
  // Duplicate keys.
  fc
    .tuple(validPlant, validPlant)
    .map(([a, b]) =>
      bytesOf(
        `{"id":${a.id},"name":${JSON.stringify(a.name)},"id":${b.id},"name":${JSON.stringify(b.name)},"name":${JSON.stringify(a.name)}}`,
      ),
    ),
  // Prototype keys carrying a whole plant.
  fc
    .constantFrom("__proto__", "constructor", "prototype")
    .map((key) => bytesOf(`{"${key}":{"id":5,"name":"proto","tag":"x"}}`)),
  // Text in other encodings, with and without their BOM.
  validPlantBody.map(({ body }) => Buffer.from(`\ufeff${body}`, "utf16le")),
  validPlantBody.map(({ body }) => Buffer.from(body, "latin1")),
);

/** Odd and wrong Content-Type values; which of them a server must accept is decided by the answer's status. */
export const oddContentType = fc.oneof(
  fc.constantFrom(
    "application/json",
    "application/json; charset=utf-8",
    "application/json;charset=UTF8",
    'application/json; charset="utf-8"',
    "APPLICATION/JSON",
    "application/json; charset=utf-16",
    "application/json; charset=latin1",
    "application/json; charset=",
    "application/json;;",
    "application/json; boundary=x; charset=utf-8",
    "application/problem+json",
    "application/jsonx",
    "text/json",
    "text/plain",
    "multipart/form-data; boundary=x",
    "application/x-www-form-urlencoded",
    "*/*",
    "application/*",
    "",
    " ",
    "application/json, text/plain",
    "application/json; charset=utf-8; charset=utf-16",
  ),
  fc.string({ maxLength: 40, unit: "grapheme-ascii" }),
);

export const oddMethod = fc.oneof(
  fc.constantFrom(
    "GET",
    "HEAD",
    "POST",
    "PUT",
    "PATCH",
    "DELETE",
    "OPTIONS",
    "TRACE",
    "CONNECT",
    "PROPFIND",
    "MKCOL",
    "M-SEARCH",
    "PURGE",
    "QUERY",
    "SEARCH",
    "LINK",
    "get",
    "Post",
  ),
  fc.stringMatching(/^[A-Z-]{1,12}$/),
);

export const oddPath = fc.oneof(
  fc.constantFrom(
    "/plants",
    "/plants/",
    "/Plants",
    "//plants",
    "/plants//",
    "/plants/1",
    "/plants/-9223372036854775808",
    "/plants/9223372036854775808",
    "/plants/%31",
    "/plants/%ff",
    "/plants/%",
    "/plants/..",
    "/plants/../plants",
    "/./plants",
    "/plants?",
    "/plants?limit=",
    "/plants?limit=0",
    "/plants?limit=1001",
    "/plants?after=%zz",
    "/plants?tag=%ff%fe",
    "/plants?limit=1&limit=2",
    "/plants?__proto__=1",
    "/plants?constructor[prototype][x]=1",
    "/plants#frag",
    "/plants;x=1",
    "/plants/1.0",
    "/plants/1e3",
    "/plants/0x10",
    "/plants/ 1",
    "*",
    "/openapi.json",
    "/healthz",
    "/readyz",
    "/metrics",
    "/%2e%2e/etc/passwd",
    "/plants/%00",
    "/" + "a".repeat(8000),
  ),
  fc.webPath(),
  fc.webPath().map((p) => `/plants${p}`),
  fc.webQueryParameters().map((q) => `/plants?${q}`),
  fc.string({ maxLength: 30, unit: "binary-ascii" }).map((s) => `/plants/${encodeURIComponent(s)}`),
);
