/**
 * Names and tags are any well-formed Unicode, so a stored one can hold a newline, a terminal
 * escape sequence or a bidirectional override. Human output shows those as `\u….` escapes, so a
 * listing cannot rewrite the terminal or fake extra lines; `--json` output carries the exact text.
 */
// eslint-disable-next-line no-control-regex -- matching control characters is the point
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

export function printable(text: string): string {
  return text.replace(UNPRINTABLE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`);
}
