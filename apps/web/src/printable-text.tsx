import { printableParts } from "@plantstore/schema";
import { Fragment } from "react";

/**
 * A name or tag as people should read it: isolated from the text around it (`<bdi>`), so a
 * right-to-left name cannot reorder its neighbours, and with every control, bidirectional control
 * or invisible character shown as its `\u….` escape in a style of its own (the rule the CLI uses).
 */
export function PrintableText({ text }: { text: string }) {
  return (
    <bdi>
      {printableParts(text).map((part, i) =>
        part.escaped ? (
          // A line may break on either side of an escape, as it may between words.
          <Fragment key={i}>
            <wbr />
            <span className="escape">{part.text}</span>
            <wbr />
          </Fragment>
        ) : (
          part.text
        ),
      )}
    </bdi>
  );
}
