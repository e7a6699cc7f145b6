/**
 * Names and tags are any well-formed Unicode, so a stored one can hold a newline, a terminal
 * escape sequence, a bidirectional override that shows the text reversed, or an invisible
 * character that makes two different names look the same. What people read (the CLI's lines, the
 * console's cells) shows those as `\u….` escapes; machine output (JSON) carries the exact text.
 *
 * Escaped: C0 and C1 controls and DEL; line and paragraph separators; the bidirectional marks,
 * embeddings, overrides and isolates; the invisible format characters (soft hyphen, zero-width
 * space, word joiner and the invisible operators, the deprecated format characters, the
 * zero-width no-break space, interlinear annotation). Zero-width (non-)joiners stay: Persian,
 * Indic scripts and emoji sequences need them.
 */
const UNPRINTABLE =
  // eslint-disable-next-line no-control-regex -- matching control characters is the point
  /[\u0000-\u001f\u007f-\u009f\u00ad\u061c\u200b\u200e\u200f\u2028\u2029\u202a-\u202e\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb]/g;

const escape = (c: string) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`;

/** The text with every character of the rule above written as a `\u….` escape. */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, escape);
}

/** A run of `printableParts`: text shown as it is, or one character's escape. */
export type PrintablePart = { text: string; escaped: boolean };

/** `printable(text)` in runs, so a display can set each escape apart from the text around it. */
export function printableParts(text: string): PrintablePart[] {
  const parts: PrintablePart[] = [];
  let shown = 0;
  for (const match of text.matchAll(UNPRINTABLE)) {
    if (match.index > shown) parts.push({ text: text.slice(shown, match.index), escaped: false });
    parts.push({ text: escape(match[0]), escaped: true });
    shown = match.index + match[0].length;
  }
  if (shown < text.length) parts.push({ text: text.slice(shown), escaped: false });
  return parts;
}
