import type { Context } from "hono";
import type { z } from "zod";
import { validate } from "../api/validation";
import type { Result } from "../core/errors";
import { fail } from "../core/errors";

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
