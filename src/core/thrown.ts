/**
 * What a thrown value says about itself, as a failed attempt's code and message. Anything can be
 * thrown (a runtime `SyntaxError` from a response body, a `TypeError` from a binding, a string), so
 * this never trusts its shape: the code is `uncaught_<name>` from a closed alphabet, the message
 * bounded.
 */
export function describeThrown(error: unknown): { readonly code: string; readonly message: string } {
  const name = error instanceof Error ? error.name : typeof error;
  const detail = error instanceof Error ? error.message : typeof error === "string" ? error : "";
  const slug = name.toLowerCase().replace(/[^a-z0-9]+/g, "_").replace(/^_+|_+$/g, "") || "error";
  return { code: `uncaught_${slug}`.slice(0, 64), message: `${name}: ${detail}`.slice(0, 1_000) };
}
