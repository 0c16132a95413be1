import type { z } from "zod";
import type { Result } from "../core/errors";
import type { ErrorCode } from "../core/errors";
import { fail, isErrorCode, ok } from "../core/errors";

/**
 * Validation of every input from outside, for every transport: a zod schema's verdict as a
 * `Result`, with the issues formatted the same way whichever route or RPC method refused them.
 */

/** Formats zod issues as `path: message` lines, the same for every route. */
function describeIssues(error: z.ZodError): { message: string; issues: { path: string; message: string }[] } {
  const issues = error.issues.slice(0, 20).map((issue) => ({
    path: issue.path.map(String).join(".") || "(root)",
    message: issue.message,
  }));
  return { message: issues.map((i) => `${i.path}: ${i.message}`).join("; "), issues };
}

/** The code a failed check names (`typedIssue`), when every issue names the same one. */
function typedCode(error: z.ZodError): ErrorCode | undefined {
  const codes = new Set(error.issues.map((issue) => (issue.code === "custom" && isErrorCode(issue.params?.["code"]) ? issue.params["code"] : undefined)));
  const [only] = codes;
  return codes.size === 1 ? only : undefined;
}

export function validate<S extends z.ZodType>(schema: S, value: unknown): Result<z.infer<S>> {
  const parsed = schema.safeParse(value);
  if (parsed.success) return ok(parsed.data);
  const { message, issues } = describeIssues(parsed.error);
  return fail(typedCode(parsed.error) ?? "validation_failed", message, { issues });
}
