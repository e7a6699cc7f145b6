import { errorText } from "./error-text.ts";

/** An error, announced by screen readers as it appears. */
export function ErrorAlert({ error }: { error: unknown }) {
  if (error === undefined) return null;
  return (
    <p role="alert" className="error">
      {errorText(error)}
    </p>
  );
}
