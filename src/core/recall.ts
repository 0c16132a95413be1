import { z } from "zod";
import { authorLabel, renderEnvelope } from "./render";
import type { NativeMessage } from "./render";

/**
 * Recall for the agent: what a search over its memory pages and the conversation's exact turns
 * found, as search results and as the memory envelope served beside the boundary. Pure: the hits
 * come from storage (`storage/recall-store`), ranked there by bm25.
 *
 * What recall serves is derived from history (pages are extracted from it or written about it), so
 * it goes in the same untrusted user-role frame as the boundary, escaped, never as system content.
 */

/** Free text recall searches with (a context's query, a search's `q`): turned into quoted terms, never search syntax. */
export const recallQueryTextSchema = z.string().min(1).max(2_000).refine((s) => s.isWellFormed(), "unpaired surrogate");

/** Memory served when a context policy does not say (`memoryBudgetChars`). */
export const DEFAULT_MEMORY_BUDGET_CHARS = 4_000;

export interface RecalledPageHit {
  readonly type: "page";
  readonly path: string;
  readonly version: number;
  readonly contentHash: string;
  readonly content: string;
  readonly snippet: string;
  readonly rank: number;
}

export interface RecalledTurnHit {
  readonly type: "turn";
  readonly role: "user" | "assistant";
  readonly messageId: string;
  readonly seq: number;
  readonly authorId: string;
  readonly authorName: string | null;
  readonly content: string;
  readonly snippet: string;
  readonly rank: number;
}

export type RecallHit = RecalledPageHit | RecalledTurnHit;

/**
 * Pages and turns in one list, best bm25 first (ties: pages before turns, then path or sequence),
 * at most `limit`. The two indexes score on their own statistics, so the order across them is an
 * approximation; within each it is exact.
 */
export function mergeHits(pages: readonly RecalledPageHit[], turns: readonly RecalledTurnHit[], limit: number): RecallHit[] {
  const key = (hit: RecallHit): string => (hit.type === "page" ? `0:${hit.path}` : `1:${String(hit.seq).padStart(16, "0")}`);
  return [...pages, ...turns]
    .sort((a, b) => a.rank - b.rank || (key(a) < key(b) ? -1 : key(a) > key(b) ? 1 : 0))
    .slice(0, Math.max(0, limit));
}

/** A turn's id as reconstruction names it (`s<seq>` for a message, `p<seq>` for a reply). */
export const turnIdOf = (hit: Pick<RecalledTurnHit, "role" | "seq">): string => `${hit.role === "user" ? "s" : "p"}${hit.seq}`;

/** One recalled item as the agent reads it inside the memory envelope. */
export function renderRecalled(hit: RecallHit): string {
  if (hit.type === "page") return `[memory page ${hit.path} (version ${hit.version})]\n${hit.content}`;
  const speaker = hit.role === "user" ? authorLabel({ id: hit.authorId, ...(hit.authorName === null ? {} : { name: hit.authorName }) }) : `reply of ${hit.authorId}`;
  return `[earlier message ${hit.messageId}] ${speaker}: ${hit.content}`;
}

const SEPARATOR = "\n\n";

export interface MemoryPack {
  readonly hits: RecallHit[];
  /** Absent when nothing was chosen. */
  readonly envelope: NativeMessage | undefined;
}

/**
 * Takes hits in order while the whole envelope (frame, notice and escaped body) stays within
 * `budgetChars`; a hit that would overflow is skipped and the next tried, so a large page does not
 * shut out smaller ones further down. Items are whole: a page or a turn is never cut.
 */
export function packMemory(hits: readonly RecallHit[], budgetChars: number): MemoryPack {
  const chosen: RecallHit[] = [];
  let envelope: NativeMessage | undefined;
  for (const hit of hits) {
    const candidate = renderEnvelope("memory", [...chosen, hit].map(renderRecalled).join(SEPARATOR));
    if (candidate.content.length > budgetChars) continue;
    chosen.push(hit);
    envelope = candidate;
  }
  return { hits: chosen, envelope };
}

const count = z.number().int().nonnegative();

/** The manifest's account of a memory envelope: what it holds, exactly which versions and turns. */
export const memoryManifestSchema = z.strictObject({
  envelopeChars: count,
  budgetChars: count,
  pages: z.array(z.strictObject({ path: z.string(), version: z.number().int().positive(), contentHash: z.string(), chars: count })),
  turns: z.array(z.strictObject({ turnId: z.string(), messageId: z.string(), seq: count, chars: count })),
});
export type MemoryManifest = z.infer<typeof memoryManifestSchema>;

export function memoryManifest(pack: MemoryPack, budgetChars: number): MemoryManifest {
  return {
    envelopeChars: pack.envelope?.content.length ?? 0,
    budgetChars,
    pages: pack.hits.flatMap((hit) => (hit.type === "page" ? [{ path: hit.path, version: hit.version, contentHash: hit.contentHash, chars: hit.content.length }] : [])),
    turns: pack.hits.flatMap((hit) => (hit.type === "turn" ? [{ turnId: turnIdOf(hit), messageId: hit.messageId, seq: hit.seq, chars: hit.content.length }] : [])),
  };
}
