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
  const altered = alteredIn(events);
  return { ok: missing.length === 0 && altered.length === 0, lastSeq, missing, altered };
}

/** The events whose body, kind, key or sensitivity no longer hash to their stored hash, oldest first (the first `LOG_FINDINGS_LISTED`). */
function alteredIn(events: readonly StoredEvent[]): number[] {
  return events
    .filter((event) => eventHash(event.conversationId, event) !== event.hash)
    .map((event) => event.seq)
    .sort((a, b) => a - b)
    .slice(0, LOG_FINDINGS_LISTED);
}

/** A run of sequence numbers with no event: `start` up to, not including, `next`. */
export interface LogGap {
  readonly start: number;
  readonly next: number;
}

/** The sequence numbers the gaps hold, oldest first, at most `LOG_FINDINGS_LISTED`. */
export function missingIn(gaps: readonly LogGap[]): number[] {
  const missing: number[] = [];
  for (const gap of [...gaps].sort((a, b) => a.start - b.start)) {
    for (let seq = gap.start; seq < gap.next && missing.length < LOG_FINDINGS_LISTED; seq++) missing.push(seq);
  }
  return missing;
}

/** The stretch of the log one page of the paged audit answers for, both ends included (empty when `fromSeq > throughSeq`). */
export interface LogRange {
  readonly fromSeq: number;
  readonly throughSeq: number;
}

/** Where a boundary row ends its coverage, as the page's range needs it. */
interface CoveringRow {
  readonly epochId: string;
  readonly position: number;
  readonly coveredThroughSeq: number;
}

/**
 * The part of the log a page of one epoch's links answers for, so that the pages of an epoch
 * together answer for all of it, each once, and none reads the log before or after its own links:
 * from just past the coverage of the link before the page (the first page: from the log's first
 * event, so the history before the epoch is judged once), through the coverage of the page's last
 * link (the last page: through the high-water mark, so the tail is judged once).
 */
export function pageLogRange(rows: readonly CoveringRow[], epochId: string, after: number, through: number, last: boolean, lastSeq: number): LogRange {
  const inEpoch = rows.filter((row) => row.epochId === epochId);
  const coverageAt = (position: number): number | undefined => {
    const held = inEpoch.filter((row) => row.position <= position).sort((a, b) => b.position - a.position)[0];
    return held?.coveredThroughSeq;
  };
  // Positions start at 1: on the first page (`after` 0) no link comes before, and the range starts at the first event.
  const fromSeq = (coverageAt(after) ?? 0) + 1;
  const throughSeq = last ? lastSeq : Math.min(lastSeq, Math.max(fromSeq - 1, ...inEpoch.filter((row) => row.position <= through).map((row) => row.coveredThroughSeq)));
  return { fromSeq, throughSeq };
}

/**
 * One page's part of the log audit: the gaps of its range (read by `readLogGaps`, never the whole
 * log's sequence numbers) and the hashes of the events it read.
 */
export function auditLogRange(lastSeq: number, range: LogRange, gaps: readonly LogGap[], events: readonly StoredEvent[]): LogAudit & { readonly range: LogRange } {
  const inRange = gaps.map((gap) => ({ start: Math.max(gap.start, range.fromSeq), next: Math.min(gap.next, range.throughSeq + 1) }));
  const missing = missingIn(inRange);
  const altered = alteredIn(events);
  return { ok: missing.length === 0 && altered.length === 0, lastSeq, missing, altered, range };
}

/** A report with the log's audit: valid only when the log is intact too. */
export function withLogAudit<Report extends { readonly valid: boolean }, Audit extends LogAudit>(report: Report, log: Audit): Report & { readonly log: Audit } {
  return { ...report, valid: report.valid && log.ok, log };
}
