import { z } from "zod";
import { authorLabel, escapeEnvelopeText, indentContinuation, renderEnvelope } from "./render";
import type { NativeMessage } from "./render";
import type { RecallCandidate, RecalledEntryHit, RecalledPageHit, RecalledTurnHit } from "./recall-rank";
import { pageKey, restates, wordsOf } from "./recall-rank";

/**
 * Recall for the agent: what a search over its memory pages and the conversation's exact turns
 * found, as search results and as the memory envelope served beside the boundary. Pure: the hits
 * come from storage (`storage/recall-reads`), ranked there by bm25, and are ordered by `recall-rank`.
 *
 * What recall serves is derived from history (pages are extracted from it or written about it), so
 * it goes in the same untrusted user-role frame as the boundary, escaped, never as system content.
 */

/** Free text recall searches with (a context's query, a search's `q`): turned into quoted terms, never search syntax. */
export const recallQueryTextSchema = z.string().min(1).max(2_000).refine((s) => s.isWellFormed(), "unpaired surrogate");

/** Memory served when a context policy does not say (`memoryBudgetChars`). */
export const DEFAULT_MEMORY_BUDGET_CHARS = 4_000;

/** A turn's id as reconstruction names it (`s<seq>` for a message, `p<seq>` for a reply). */
export const turnIdOf = (hit: Pick<RecalledTurnHit, "role" | "seq">): string => `${hit.role === "user" ? "s" : "p"}${hit.seq}`;

const SEPARATOR = "\n";

/** A page's header: its path and version, and the conversation it was extracted from when that is another one. */
const pageHeader = (hit: { readonly path: string; readonly version: number; readonly elsewhere?: string | undefined }): string =>
  `[memory page ${hit.path} (version ${hit.version}${hit.elsewhere === undefined ? "" : `, from ${hit.elsewhere}`})]`;

/*
 * The envelope's items start at the margin: `[msg …]`, `[memory page …]` and an
 * extracted page's `- key: …` lines (each one line: statements are). Every line of stored text
 * after an item's first is indented (`indentContinuation`), a page's whole content below its
 * header, so no message or page can start a line that passes for an item.
 */

/** A turn as the agent reads it inside the memory envelope. */
function renderTurn(hit: RecalledTurnHit): string {
  const speaker = hit.role === "user" ? authorLabel({ id: hit.authorId, ...(hit.authorName === null ? {} : { name: hit.authorName }) }) : `reply of ${hit.authorId}`;
  return `[msg ${hit.messageId}] ${speaker}: ${indentContinuation(hit.content)}`;
}

/** A page served whole: its header, then its content, every line indented. */
const pageBlock = (hit: RecalledPageHit): string => `${pageHeader(hit)}\n\t${indentContinuation(hit.content)}`;

/** The first entry of an extracted page: the page's header, then the entry's line. */
const entryBlock = (hit: RecalledEntryHit): string => `${pageHeader(hit)}\n${hit.content}`;

/**
 * The envelope's body for the chosen items: a whole page under its header, the entries taken from
 * one page together under that page's header (where its first entry ranked), turns one by one.
 */
export function renderRecalled(hits: readonly RecallCandidate[]): string {
  const blocks: string[] = [];
  const pageBlocks = new Map<string, number>();
  for (const hit of hits) {
    if (hit.type === "turn") blocks.push(renderTurn(hit));
    else if (hit.type === "page") blocks.push(pageBlock(hit));
    else {
      const at = pageBlocks.get(pageKey(hit));
      if (at === undefined) {
        pageBlocks.set(pageKey(hit), blocks.length);
        blocks.push(entryBlock(hit));
      } else blocks[at] = `${blocks[at] ?? ""}\n${hit.content}`;
    }
  }
  return blocks.join(SEPARATOR);
}

export interface MemoryPack {
  readonly hits: RecallCandidate[];
  /** Absent when nothing was chosen. */
  readonly envelope: NativeMessage | undefined;
}

/** Characters `text` takes once escaped in an envelope (escaping is per character, so sizes add up). */
const escapedChars = (text: string): number => escapeEnvelopeText(text).length;

/**
 * Takes candidates in order while the whole envelope (frame, notice and escaped body) stays within
 * `budgetChars`; one that would overflow is skipped and the next tried, so a large page does not
 * shut out smaller items further down. Items are whole: a page, an entry or a turn is never cut.
 * Nothing is said twice: an entry taken from a message whose turn was chosen, and a turn or an
 * entry whose words a chosen one already holds (`restates`: the same message again, by whoever, or
 * an entry and the turn it was taken from), are skipped for the next. Sizes are added up as items are taken (the body is rendered once), so
 * packing hundreds of candidates stays linear.
 */
export function packMemory(candidates: readonly RecallCandidate[], budgetChars: number): MemoryPack {
  const chosen: RecallCandidate[] = [];
  const pagesServed = new Set<string>();
  const turnsServed = new Set<number>();
  const said: Set<string>[] = [];
  let chars = renderEnvelope("memory", "").content.length;
  for (const hit of candidates) {
    // An entry taken from a message whose turn is already served adds nothing the exact words do not.
    if (hit.type === "entry" && hit.elsewhere === undefined && hit.seq !== undefined && turnsServed.has(hit.seq)) continue;
    const words = hit.type === "page" ? undefined : wordsOf(hit);
    if (words !== undefined && said.some((earlier) => restates(words, earlier))) continue;
    const separator = chosen.length === 0 ? 0 : SEPARATOR.length;
    const added =
      hit.type === "turn"
        ? separator + escapedChars(renderTurn(hit))
        : hit.type === "page"
          ? separator + escapedChars(pageBlock(hit))
          : pagesServed.has(pageKey(hit))
            ? 1 + escapedChars(hit.content)
            : separator + escapedChars(entryBlock(hit));
    if (chars + added > budgetChars) continue;
    chars += added;
    chosen.push(hit);
    if (words !== undefined) said.push(words);
    if (hit.type === "entry") pagesServed.add(pageKey(hit));
    if (hit.type === "turn") turnsServed.add(hit.seq);
  }
  return { hits: chosen, envelope: chosen.length === 0 ? undefined : renderEnvelope("memory", renderRecalled(chosen)) };
}

const count = z.number().int().nonnegative();

/** The manifest's account of a memory envelope: what it holds, exactly which versions and turns. */
export const memoryManifestSchema = z.strictObject({
  envelopeChars: count,
  budgetChars: count,
  /** Each page served from: whole, or (with `keys`) only the entries under those keys, `chars` of them. */
  pages: z.array(
    z.strictObject({
      path: z.string(),
      version: z.number().int().positive(),
      contentHash: z.string(),
      chars: count,
      keys: z.array(z.string()).optional(),
      /** The conversation an extracted page was kept with, when it is another than the one served (an agent that shares memory). */
      conversationId: z.string().optional(),
    }),
  ),
  turns: z.array(z.strictObject({ turnId: z.string(), messageId: z.string(), seq: count, chars: count })),
});
export type MemoryManifest = z.infer<typeof memoryManifestSchema>;

export function memoryManifest(pack: MemoryPack, budgetChars: number): MemoryManifest {
  const pages = new Map<string, MemoryManifest["pages"][number]>();
  for (const hit of pack.hits) {
    if (hit.type === "turn") continue;
    const where = hit.elsewhere === undefined ? {} : { conversationId: hit.elsewhere };
    if (hit.type === "page") {
      pages.set(pageKey(hit), { path: hit.path, version: hit.version, contentHash: hit.contentHash, chars: hit.content.length, ...where });
      continue;
    }
    const seen = pages.get(pageKey(hit));
    pages.set(pageKey(hit), {
      path: hit.path,
      version: hit.version,
      contentHash: hit.contentHash,
      chars: (seen?.chars ?? 0) + hit.content.length,
      keys: [...(seen?.keys ?? []), hit.key],
      ...where,
    });
  }
  return {
    envelopeChars: pack.envelope?.content.length ?? 0,
    budgetChars,
    pages: [...pages.values()],
    turns: pack.hits.flatMap((hit) => (hit.type === "turn" ? [{ turnId: turnIdOf(hit), messageId: hit.messageId, seq: hit.seq, chars: hit.content.length }] : [])),
  };
}
