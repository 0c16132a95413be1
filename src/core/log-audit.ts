import type { StoredEvent } from "./events";
import { eventHash } from "./events";

/**
 * The log as a whole, judged by the audit: the links of a chain are checked against the slices
 * their packets froze, but an event deleted after the newest boundary (a tail turn, a run receipt,
 * the newest event) or rewritten anywhere would pass them all. The log is gap-free by construction
 * (migrations/shard/0001) and its high-water mark only ever advances (migrations/shard/0020), so a
 * sequence number at or below the mark with no event is an event that was stored and is gone; an
 * event whose body no longer hashes to its stored hash was changed after it was written.
 */

/** At most this many sequence numbers are listed per finding: a report names, it does not dump. */
export const LOG_FINDINGS_LISTED = 100;

export interface LogAudit {
  /** No event missing and none altered. */
  readonly ok: boolean;
  /** The conversation's high-water mark: the sequence number of the newest event ever stored. */
  readonly lastSeq: number;
  /** Sequence numbers at or below `lastSeq` with no event, oldest first (the first `LOG_FINDINGS_LISTED`). */
  readonly missing: readonly number[];
  /** Events whose body, kind, key or sensitivity no longer hash to their stored hash (the first `LOG_FINDINGS_LISTED`). */
  readonly altered: readonly number[];
}

/**
 * `seqs`: every sequence number the log holds, in any order; `events`: the events whose hashes to
 * check (the whole log for the full audit, the slices read for a page).
 */
export function auditLog(lastSeq: number, seqs: Iterable<number>, events: readonly StoredEvent[]): LogAudit {
  const held = new Set(seqs);
  const missing: number[] = [];
  for (let seq = 1; seq <= lastSeq && missing.length < LOG_FINDINGS_LISTED; seq++) if (!held.has(seq)) missing.push(seq);
  const altered = events
    .filter((event) => eventHash(event.conversationId, event) !== event.hash)
    .map((event) => event.seq)
    .sort((a, b) => a - b)
    .slice(0, LOG_FINDINGS_LISTED);
  return { ok: missing.length === 0 && altered.length === 0, lastSeq, missing, altered };
}

/** A report with the log's audit: valid only when the log is intact too. */
export function withLogAudit<Report extends { readonly valid: boolean }>(report: Report, log: LogAudit): Report & { readonly log: LogAudit } {
  return { ...report, valid: report.valid && log.ok, log };
}
