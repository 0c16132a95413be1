import { scopesAllow } from "../core/conversation-id";
import { ShardConfigurationError } from "./shards";

/**
 * The D1 read of the operator inspector that no other module needs: the conversations a token may
 * see. (Its boundary reads are the chain audit's, in shard/boundary-audit.)
 */

// ---------------------------------------------------------------------------------------------
// Scopes as key ranges

/**
 * A token scope as a range of `conversations.id`: one exact id, or every id in [from, to)
 * (`to` null: no upper bound). A prefix `p*` is the range [p, p with its last character
 * incremented), which the primary-key index answers without reading ids outside the scope.
 */
export type ScopeRange = { readonly kind: "exact"; readonly id: string } | { readonly kind: "prefix"; readonly from: string; readonly to: string | null };

/**
 * Conversation ids are ASCII (`conversationIdSchema`), and for ASCII strings the byte order SQLite
 * compares TEXT in and JavaScript's code-unit order agree, so a range computed here selects in
 * SQL exactly what `scopeAllows` accepts. A prefix with any other character matches no id at all,
 * so it yields no range rather than one whose bounds the two orders might disagree on.
 */
const ASCII = /^[\x00-\x7f]*$/;

function prefixEnd(prefix: string): string | null {
  if (prefix === "") return null;
  return prefix.slice(0, -1) + String.fromCharCode(prefix.charCodeAt(prefix.length - 1) + 1);
}

const rangeStart = (range: ScopeRange): string => (range.kind === "exact" ? range.id : range.from);

/**
 * The token's scope patterns as sorted, disjoint ranges: a pattern inside a wider one is dropped
 * (two prefixes are nested or disjoint, never partly overlapping), so reading the ranges in order
 * and concatenating the rows gives every in-scope id once, in id order.
 */
export function scopeRanges(patterns: readonly string[]): ScopeRange[] {
  const prefixes = [...new Set(patterns.filter((p) => p.endsWith("*")).map((p) => p.slice(0, -1)))].filter((p) => ASCII.test(p));
  const widest = prefixes.filter((p) => !prefixes.some((q) => q !== p && p.startsWith(q)));
  const exact = [...new Set(patterns.filter((p) => !p.endsWith("*")))].filter((id) => !widest.some((q) => id.startsWith(q)));
  const ranges: ScopeRange[] = [
    ...widest.map((from): ScopeRange => ({ kind: "prefix", from, to: prefixEnd(from) })),
    ...exact.map((id): ScopeRange => ({ kind: "exact", id })),
  ];
  return ranges.sort((a, b) => (rangeStart(a) < rangeStart(b) ? -1 : rangeStart(a) > rangeStart(b) ? 1 : 0));
}

// ---------------------------------------------------------------------------------------------
// Conversations in scope

export interface ConversationSummary {
  readonly conversationId: string;
  /**
   * Events in the log. Equal to the last sequence number: sequences start at 1 and the insert
   * trigger refuses a gap, so the count needs one index probe rather than a scan of the log.
   */
  readonly events: number;
  readonly lastSeq: number;
  readonly lastRecordedAt: string;
}

interface PlacementRow {
  conversation_id: string;
  shard: string;
}

interface SummaryRow {
  conversation_id: string;
  last_seq: number;
  /** Epoch milliseconds. */
  last_recorded_at: number;
}

/** Placements in id order (control database): which conversations exist, and where each lives. */
const PLACEMENTS = "SELECT conversation_id, shard FROM conversation_placements";

function rangeStatement(db: D1Database, range: ScopeRange, after: string, limit: number): D1PreparedStatement {
  if (range.kind === "exact") return db.prepare(`${PLACEMENTS} WHERE conversation_id = ? AND conversation_id > ?`).bind(range.id, after);
  // Two statements rather than `(? IS NULL OR id < ?)`, which the planner cannot use as a bound.
  if (range.to === null) {
    return db.prepare(`${PLACEMENTS} WHERE conversation_id >= ? AND conversation_id > ? ORDER BY conversation_id LIMIT ?`).bind(range.from, after, limit);
  }
  return db
    .prepare(`${PLACEMENTS} WHERE conversation_id >= ? AND conversation_id < ? AND conversation_id > ? ORDER BY conversation_id LIMIT ?`)
    .bind(range.from, range.to, after, limit);
}

/** The newest event of each listed conversation on one shard, each sought by its key. */
function summaryStatement(shard: D1Database, ids: readonly string[]): D1PreparedStatement {
  return shard
    .prepare(
      `SELECT k.conversation_id, e.seq AS last_seq, e.recorded_at AS last_recorded_at
       FROM json_each(?1) j CROSS JOIN conversation_keys k ON k.conversation_id = j.value
       CROSS JOIN log e ON e.conversation_key = k.id AND e.seq = (SELECT MAX(seq) FROM log WHERE conversation_key = k.id)`,
    )
    .bind(JSON.stringify(ids));
}

/**
 * One page of the conversations the scopes reach, in id order, after the id `after` ('' from the
 * start). The page is chosen from the placements in the control database: one bounded statement
 * per scope range, all in one D1 batch; one row beyond `limit` is read to tell a full last page
 * from a page with more behind it. Then each shard holding any of the page's conversations is
 * asked, all at once, for their newest events: at most one statement per shard, each naming at
 * most `limit` conversations, so the fan-out is bounded by the page, not by the deployment. A
 * conversation placed but without events yet is not listed. Every row is checked against the
 * scopes again with the same rule the API applies, so a mistranslated range could hide a
 * conversation but never show one out of scope.
 */
export async function listConversations(
  control: D1Database,
  shards: ReadonlyMap<string, D1Database>,
  scopes: readonly string[],
  after: string,
  limit: number,
): Promise<{ conversations: ConversationSummary[]; nextAfter: string | null }> {
  const ranges = scopeRanges(scopes).filter((r) => (r.kind === "exact" ? r.id > after : r.to === null || r.to > after));
  if (ranges.length === 0) return { conversations: [], nextAfter: null };
  const results = await control.batch<PlacementRow>(ranges.map((range) => rangeStatement(control, range, after, limit + 1)));
  const rows = results.flatMap((r) => r.results).sort((a, b) => (a.conversation_id < b.conversation_id ? -1 : a.conversation_id > b.conversation_id ? 1 : 0));
  const first = rows.slice(0, limit);
  const page = first.filter((row) => scopesAllow(scopes, row.conversation_id));
  const last = first.at(-1);
  const byShard = new Map<string, string[]>();
  for (const row of page) byShard.set(row.shard, [...(byShard.get(row.shard) ?? []), row.conversation_id]);
  const summaries = new Map<string, SummaryRow>();
  await Promise.all(
    [...byShard].map(async ([name, ids]) => {
      const shard = shards.get(name);
      if (shard === undefined) throw new ShardConfigurationError(`conversations placed on ${name}, which this Worker does not bind`, { reason: "shard_unbound", shard: name });
      for (const row of (await summaryStatement(shard, ids).all<SummaryRow>()).results) summaries.set(row.conversation_id, row);
    }),
  );
  return {
    conversations: page.flatMap((row) => {
      const summary = summaries.get(row.conversation_id);
      return summary === undefined ? [] : [{ conversationId: row.conversation_id, events: summary.last_seq, lastSeq: summary.last_seq, lastRecordedAt: new Date(summary.last_recorded_at).toISOString() }];
    }),
    nextAfter: rows.length > limit && last !== undefined ? last.conversation_id : null,
  };
}
