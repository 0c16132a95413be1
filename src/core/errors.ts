/**
 * The closed set of failures Foldline reports. Every layer returns these as values; the HTTP
 * shell maps them to a status once (`http/errors.ts`), so a code always means one thing.
 */
export const ERROR_STATUS = {
  invalid_json: 400,
  validation_failed: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  idempotency_conflict: 409,
  sequence_conflict: 409,
  id_in_use: 409,
  declaration_conflict: 409,
  chain_invalid: 409,
  // The agent's chain fell too far behind its log to hold the exact recent tail (its compactions
  // keep failing): no context until they catch up; an incident is open meanwhile.
  compaction_behind: 409,
  payload_too_large: 413,
  unsupported_media_type: 415,
  declaration_mismatch: 422,
  unknown_document: 422,
  amendment_too_large: 422,
  context_budget_exceeded: 422,
  document_budget_exceeded: 422,
  secret_outside_namespace: 422,
  unsafe_characters: 422,
  internal: 500,
  // A storage or platform call failed or timed out, or the deployment's shards cannot serve the
  // conversation (`core/transient`): answered with `Retry-After`, and the same request succeeds later.
  unavailable: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_STATUS;

type Scalar = string | number | boolean | null;
/** What error details may hold: shallow JSON, so they cross RPC and HTTP unchanged. */
export type ErrorDetail = Scalar | readonly Scalar[] | readonly { readonly [key: string]: Scalar }[];

export interface AppError {
  readonly code: ErrorCode;
  readonly message: string;
  /** Machine-readable specifics (the offending field, the current sequence…). Never secrets. */
  readonly details?: { readonly [key: string]: ErrorDetail };
}

export type Result<T, E = AppError> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: E };

export const ok = <T>(value: T): { readonly ok: true; readonly value: T } => ({ ok: true, value });

/**
 * A schema check whose failure is its own code rather than `validation_failed` (zod issue
 * `params`): `validate` answers with it when every issue of a request carries the same one.
 */
export const typedIssue = (code: ErrorCode): { readonly params: { readonly code: ErrorCode } } => ({ params: { code } });

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === "string" && Object.hasOwn(ERROR_STATUS, value);
}

export const fail = (code: ErrorCode, message: string, details?: { readonly [key: string]: ErrorDetail }): { readonly ok: false; readonly error: AppError } => ({
  ok: false,
  error: details === undefined ? { code, message } : { code, message, details },
});
