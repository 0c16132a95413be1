import { z } from "zod";
import type { ErrorCode } from "../../core/errors";
import { ERROR_STATUS } from "../../core/errors";
import type { ResponseConfig } from "./types";
import { SCHEMA_REF_PREFIX } from "./types";

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

/** The header every `unavailable` answer carries (`http/errors.ts`). */
const RETRY_AFTER = {
  "Retry-After": {
    description: "seconds to wait before retrying the same request (also `retryAfterSeconds` in the body)",
    required: true,
    schema: { type: "integer", minimum: 1 },
  },
} as const;

/**
 * What every `/v1` route can answer: it authenticates, then checks the path's conversation or agent
 * against the token's scopes; and since the token is read from D1, a storage failure answers
 * `unavailable` (503, `Retry-After`) on every one of them.
 */
export const SCOPED_CODES = ["unauthorized", "forbidden", "validation_failed", "unsafe_characters", "unavailable"] as const satisfies readonly ErrorCode[];

/** What a route with a query can answer besides: the query's shape. */
export const QUERY_CODES = ["validation_failed"] as const satisfies readonly ErrorCode[];

/** What a route with a body can answer besides: a body is checked for size, media type and JSON before its shape. */
export const BODY_CODES = ["invalid_json", "validation_failed", "payload_too_large", "unsupported_media_type"] as const satisfies readonly ErrorCode[];

/**
 * The error responses of an operation that can answer with `codes`, one per status (from
 * `ERROR_STATUS`), each the `Problem` schema with its code narrowed to the ones of that status.
 * `internal` is added to every operation: any route can fail unexpectedly (`app.onError`). The
 * `unavailable` response (503) also describes its `Retry-After` header.
 */
export function problems(...codes: readonly (ErrorCode | readonly ErrorCode[])[]): Record<string, ResponseConfig> {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set([...codes.flat(), "internal" as const])) {
    byStatus.set(ERROR_STATUS[code], [...(byStatus.get(ERROR_STATUS[code]) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus].map(([status, statusCodes]) => [
      String(status),
      {
        description: statusCodes.map((code) => `\`${code}\``).join(", "),
        ...(status === ERROR_STATUS.unavailable ? { headers: RETRY_AFTER } : {}),
        content: {
          "application/json": {
            schema: {
              allOf: [{ $ref: `${SCHEMA_REF_PREFIX}Problem` }, { properties: { error: { properties: { code: { enum: statusCodes } } } } }],
            },
          },
        },
      },
    ]),
  );
}
