import type { Context } from "hono";
import type { z } from "zod";
import type { Result } from "../core/errors";
import type { ErrorCode } from "../core/errors";
import { fail, isErrorCode, ok } from "../core/errors";

/** Formats zod issues as `path: message` lines, the same for every route. */
export function describeIssues(error: z.ZodError): { message: string; issues: { path: string; message: string }[] } {
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

/** Reads a JSON request body and validates it; a body that is not JSON is `invalid_json`. */
export async function readJson<S extends z.ZodType>(c: Context, schema: S): Promise<Result<z.infer<S>>> {
  const type = c.req.header("content-type") ?? "";
  if (!/^application\/([a-z.+-]*\+)?json\b/i.test(type)) {
    return fail("unsupported_media_type", "send the body as application/json");
  }
  let body: unknown;
  try {
    body = JSON.parse(await c.req.text());
  } catch {
    return fail("invalid_json", "the request body is not valid JSON");
  }
  return validate(schema, body);
}
