import type { SkipReason } from "./preflight-decider";

/**
 * What Foldline writes to Workers Logs: one JSON object per line, `{ "event", "level", ...fields }`,
 * with a stable event name and only the fields below. Logs leave the deployment's trust boundary
 * (the dashboard, `wrangler tail`, any Logpush destination), so a line carries ids, counts,
 * durations, codes and closed sets, and never text: no message content, no names, no summaries,
 * no error messages (a thrown value is reduced to its code, `describeThrown(error).code`).
 *
 * The types keep it that way at the call site: an event takes only its own fields, every field name
 * is one of `FIELD_NAMES`, and a value is a number, a boolean or a string. A string is an id or a
 * code, and `logLine` checks that it looks like one: text that reached a string field anyway (it
 * has spaces, or is long) is written as `"redacted"`.
 */

export type LogLevel = "debug" | "info" | "warn" | "error";

/** The append's path through the conversation's object (`durable/conversation-object`). */
export type AppendPath = "fast" | "slow" | "batch";

/** A best-effort step that failed after the work it follows was kept; something later catches up. */
export type FailedStep =
  | "raise_revision"
  | "schedule_catch_up"
  | "preflight"
  | "settle_bookkeeping"
  | "wake"
  | "close_wake_streak"
  | "raise_wake_incident"
  | "record_job_failure"
  | "extraction_handoff"
  | "reply_handoff"
  | "reply_handoff_retry"
  | "publish_declaration";

type Id = string;
/** A code from a closed alphabet (`[a-z0-9_]`), such as an error code, a failure kind or an incident kind. */
type Code = string;
type Count = number;
type Ms = number;
type Maybe<T> = T | undefined;

/**
 * Every event and its fields. The ids let an operator follow one thing through: a conversation,
 * an agent, a run, a sequence number.
 */
export type LogEvents = Checked<{
  /** A client's append, answered. */
  append: { conversationId: Id; path: AppendPath; events: Count; written: Count; outcome: "ok" | "refused"; code?: Maybe<Code>; lastSeq?: Maybe<Count>; ms: Ms };
  /** One admitted source's compaction preflight, for one agent's chain. */
  preflight: { conversationId: Id; agentId: Id; seq: Count; action: "skip" | "plan"; reason?: Maybe<SkipReason>; activeChars: Count };
  /** A compaction planned (its packet stored and its job queued), or failed closed. */
  plan: { conversationId: Id; agentId: Id; runId: Id; seq: Count; outcome: "planned" | "failed"; code?: Maybe<Code>; frozenTurns?: Maybe<Count>; frozenChars?: Maybe<Count>; ms?: Maybe<Ms> };
  /** A queue job taken up; `queueWaitMs` since its message was sent (or last retried). */
  "job.start": { job: JobType; conversationId?: Maybe<Id>; agentId?: Maybe<Id>; runId?: Maybe<Id>; attempts: Count; deadLetter: boolean; queueWaitMs: Ms };
  /** A queue job finished: acked (`done`), retried, past its deadline, or failed by a throw. */
  "job.end": {
    job: JobType;
    conversationId?: Maybe<Id>;
    agentId?: Maybe<Id>;
    runId?: Maybe<Id>;
    attempts: Count;
    deadLetter: boolean;
    outcome: "done" | "retry" | "deadline" | "failed";
    code?: Maybe<Code>;
    retryInSeconds?: Maybe<Count>;
    ms: Ms;
    modelMs?: Maybe<Ms>;
    inputTokens?: Maybe<Count>;
    outputTokens?: Maybe<Count>;
  };
  /** A queue message that is no job: dropped. */
  "job.dropped": { deadLetter: boolean };
  /** A compactor's validated output offered to its conversation: a boundary, or refused. */
  settlement: { conversationId: Id; agentId: Id; runId: Id; outcome: "settled" | "refused"; code?: Maybe<Code>; seq?: Maybe<Count>; ms: Ms };
  /** A settled boundary's memory extraction. */
  extraction: { conversationId: Id; agentId: Id; runId: Id; outcome: "extracted" | "already_recorded" | "failed"; code?: Maybe<Code>; facts?: Maybe<Count>; versionsWritten?: Maybe<Count>; inputTokens?: Maybe<Count>; outputTokens?: Maybe<Count>; ms?: Maybe<Ms> };
  /** An agent's proposal sent to its Telegram chat, or why not. */
  "reply.dispatch": { conversationId: Id; agentId: Id; outcome: "delivered" | "rate_limited" | "forbidden" | "rejected" | "unavailable" | "not_sent"; parts: Count; ms: Ms };
  /** An incident recorded, or raised again while open (`count`: its occurrences so far). */
  incident: { conversationId: Id; agentId: Id | null; runId: Id | null; kind: Code; code: Code; count?: Maybe<Count> };
  /** Memory recalled for a context or compose call with a query: how many items the envelope holds and its size. */
  recall: { conversationId: Id; agentId: Id; hits: Count; envelopeChars: Count; ms: Ms };
  /** A request answered with an error: its code and status, nothing of the request. */
  "request.refused": { code: Code; status: Count };
  /** A throw no handler expected, answered as `internal` or (a retry fixes it) `unavailable`. */
  unhandled: { surface: "http" | "rpc" | "inspector" | "mcp"; outcome: "internal" | "unavailable"; code: Code };
  /** What the MCP SDK reported beside its answer (a request it rejected, a failure after it): the thrown value's code alone. */
  "mcp.error": { code: Code };
  /** A best-effort step that failed; what catches up is named in `docs/OPERATIONS.md`. */
  "step.failed": { step: FailedStep; conversationId?: Maybe<Id>; agentId?: Maybe<Id>; runId?: Maybe<Id>; kind?: Maybe<Code>; revision?: Maybe<Count>; code: Code };
  /** A Telegram update redelivered with another body: the first delivery stays the record. */
  "webhook.conflict": { conversationId: Id; updateId: Count };
  /**
   * A new incident's alert to the operator's webhook (`core/alerts`): held back by the rate limit
   * (`count`: its kind's incidents in the window so far), not queued, delivered, refused or
   * unreachable (retried), given up after the queue's last retry, or alerts disabled by unusable
   * settings. `code` is what went wrong (a thrown code, or the setting's problem), never the incident's.
   */
  alert: {
    conversationId?: Maybe<Id>;
    agentId?: Maybe<Id | null>;
    runId?: Maybe<Id | null>;
    kind?: Maybe<Code>;
    outcome: "suppressed" | "not_queued" | "delivered" | "refused" | "unreachable" | "given_up" | "disabled";
    code?: Maybe<Code>;
    status?: Maybe<Count>;
    attempts?: Maybe<Count>;
    count?: Maybe<Count>;
  };
}>;

export type LogEvent = keyof LogEvents;

type JobType = "compaction" | "extract" | "reply" | "notice" | "alert";

/** The only field names a line may carry. */
const FIELD_NAMES = [
  "conversationId",
  "agentId",
  "runId",
  "seq",
  "lastSeq",
  "updateId",
  "revision",
  "path",
  "action",
  "reason",
  "job",
  "outcome",
  "step",
  "surface",
  "kind",
  "code",
  "events",
  "written",
  "attempts",
  "facts",
  "versionsWritten",
  "parts",
  "count",
  "status",
  "frozenTurns",
  "frozenChars",
  "activeChars",
  "inputTokens",
  "outputTokens",
  "retryInSeconds",
  "deadLetter",
  "ms",
  "queueWaitMs",
  "modelMs",
  "hits",
  "envelopeChars",
] as const;
type FieldName = (typeof FIELD_NAMES)[number];

/** Fails to compile when an event names a field outside `FIELD_NAMES` or gives one a value that is not a scalar. */
type Checked<T extends { [E in keyof T]: { [K in keyof T[E]]: K extends FieldName ? string | number | boolean | null | undefined : never } }> = T;

/** An id or a code: what a string field may hold. Ids are at most 256 characters (a conversation id's bound). */
const ID_OR_CODE = /^[A-Za-z0-9._:-]{1,256}$/;

/** Written in place of a string that is not an id or a code. */
const REDACTED = "redacted";

/** A string field as written: itself when it is an id or a code, `"redacted"` otherwise. */
export function idOrCode(value: string): string {
  return ID_OR_CODE.test(value) ? value : REDACTED;
}

/** One log line: the event, its level, then its fields in `FIELD_NAMES` order, each checked. */
export function logLine<E extends LogEvent>(level: LogLevel, event: E, fields: LogEvents[E]): string {
  const line: Record<string, string | number | boolean | null> = { event, level };
  const given: Partial<Record<FieldName, unknown>> = fields;
  for (const name of FIELD_NAMES) {
    const value = given[name];
    if (value === undefined) continue;
    line[name] = typeof value === "string" ? idOrCode(value) : typeof value === "number" || typeof value === "boolean" || value === null ? value : REDACTED;
  }
  return JSON.stringify(line);
}
