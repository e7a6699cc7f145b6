import { z } from "zod";

/** The interface's error body: exactly these two fields, on every non-2xx response. */
export const ErrorBody = z
  .object({
    error: z.int32().meta({ description: "Numeric error indicator", format: "int32" }),
    message: z.string().meta({ description: "Error text" }),
  })
  .meta({ id: "Error" });
export type ErrorBody = z.infer<typeof ErrorBody>;
