import { z } from "zod";
import type { ErrorCode } from "../../core/errors";
import { ERROR_STATUS } from "../../core/errors";

/** The closed set of error codes, in the order `ERROR_STATUS` lists them. */
export const errorCodes = Object.keys(ERROR_STATUS) as ErrorCode[];

/**
 * The wire form `problem()` (`http/errors.ts`) gives every failure. The error object is loose
 * because a code's details (`currentSeq`, `reason`, `issues`, `mismatches`…) sit beside `code` and
 * `message` rather than under a key of their own.
 */
export const problemSchema = z.strictObject({
  error: z.looseObject({
    code: z.enum(errorCodes),
    message: z.string(),
  }),
});
