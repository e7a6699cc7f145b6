/**
 * PostgreSQL array literals built here rather than by node-postgres, which runs two regular
 * expressions over every element (ids included) and was the largest item of the batch insert's
 * client-side cost. Sent as text and cast in the statement (`$1::bigint[]`).
 */
export function bigintArrayLiteral(values: readonly bigint[]): string {
  return `{${values.join(",")}}`;
}

const NEEDS_ESCAPE = /["\\]/;

/** Every element quoted, so commas, braces, spaces and the word NULL stay text; `null` is SQL NULL. */
export function textArrayLiteral(values: ReadonlyArray<string | null>): string {
  let literal = "{";
  for (let i = 0; i < values.length; i++) {
    if (i > 0) literal += ",";
    const value = values[i]!;
    if (value === null) literal += "NULL";
    else if (NEEDS_ESCAPE.test(value)) literal += `"${value.replaceAll("\\", "\\\\").replaceAll('"', '\\"')}"`;
    else literal += `"${value}"`;
  }
  return `${literal}}`;
}
