import { describe, expect, it } from "vitest";

import { printable, printableParts } from "./printable.ts";

describe("printable", () => {
  it("writes controls, line breaks and bidirectional controls as \\u escapes", () => {
    expect(printable("Fern\n71: Fake\u001b[2J")).toBe("Fern\\u000a71: Fake\\u001b[2J");
    expect(printable("\u202eevil")).toBe("\\u202eevil");
    expect(printable("a\u202ab\u202bc\u202cd\u202de\u2066f\u2067g\u2068h\u2069i\u200ej\u200fk\u061cl")).toBe(
      "a\\u202ab\\u202bc\\u202cd\\u202de\\u2066f\\u2067g\\u2068h\\u2069i\\u200ej\\u200fk\\u061cl",
    );
    expect(printable("\u0085\u2028\u2029\u007f\u009f")).toBe("\\u0085\\u2028\\u2029\\u007f\\u009f");
  });

  it("writes invisible format characters as escapes, so two names that look alike do not read alike", () => {
    expect(printable("Fe\u200brn")).toBe("Fe\\u200brn");
    expect(printable("\ufeffFern\u00ad\u2060\u2061\u2062\u2063\u2064\u206a\u206f\ufff9\ufffb")).toBe(
      "\\ufeffFern\\u00ad\\u2060\\u2061\\u2062\\u2063\\u2064\\u206a\\u206f\\ufff9\\ufffb",
    );
  });

  it("keeps every other character, joiners that scripts and emoji need included", () => {
    const text = "Fiddle-leaf fig 🌿 é ñ 漢字 עברית مرحبا می‌خواهم 👩‍🌾 🏴󠁧󠁢󠁳󠁣󠁴󠁿 \\u202e";
    expect(printable(text)).toBe(text);
    expect(printableParts(text)).toEqual([{ text, escaped: false }]);
  });

  it("splits a text into what is shown as it is and what is shown escaped, in order", () => {
    expect(printableParts("\u202eabc\u202c\u202cx")).toEqual([
      { text: "\\u202e", escaped: true },
      { text: "abc", escaped: false },
      { text: "\\u202c", escaped: true },
      { text: "\\u202c", escaped: true },
      { text: "x", escaped: false },
    ]);
    expect(printableParts("")).toEqual([]);
  });
});
