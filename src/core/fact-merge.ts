import type { ExtractedFact } from "./fact-extraction";
import { oneLine } from "./fact-extraction";

/**
 * The merge rule of extracted pages, and the one owner of their text format. A page holds one
 * current statement per fact key; a later fact with the same key supersedes it, and the statement
 * it replaces stays on the page as "previously" (and, whole, in the page's version history).
 *
 * Format (one fact per block, every line one line of text):
 *
 *     Extracted memory <path>: facts taken from conversation history, newest value first.
 *     - <key>: <statement> (msg <message id>, ref <12 hex of the source event's hash>)
 *       previously: <statement> (msg <message id>, ref <…>)
 *
 * The `ref` is a fact's identity: a fact whose source event is already on the page under its key
 * (current or previously) was applied before, so merging the same facts again changes nothing —
 * a redelivered extraction job writes no second version, and an old slice replayed after a newer
 * one cannot bring back the value the newer one replaced.
 */

/** Superseded statements kept on the page per key; older ones stay in the page's version history. */
export const MAX_PREVIOUS = 3;
/** Keys per page; the oldest-updated go first past it, so a page stays well under its size limit. */
export const MAX_KEYS_PER_PAGE = 24;

interface Line {
  readonly statement: string;
  readonly messageId: string;
  readonly ref: string;
}

export interface Entry {
  current: Line;
  previous: Line[];
}

export const REF_CHARS = 12;

const header = (path: string): string => `Extracted memory ${path}: facts taken from conversation history, newest value first.`;
const CURRENT = /^- ([a-z0-9]+(?:-[a-z0-9]+)*): (.*) \(msg (.+), ref ([0-9a-f]{12})\)$/;
const PREVIOUS = /^ {2}previously: (.*) \(msg (.+), ref ([0-9a-f]{12})\)$/;

/** A message id as the page shows it: one line, without the characters its suffix is parsed by. */
export const shownId = (id: string): string => oneLine(id, 64).replace(/[(),]/g, "_") || "_";

const render = (line: Line): string => `${line.statement} (msg ${line.messageId}, ref ${line.ref})`;

/** The entries of a page's text, in page order; lines that are not in the format are ignored. */
export function parsePage(content: string): Map<string, Entry> {
  const entries = new Map<string, Entry>();
  let last: Entry | undefined;
  for (const text of content.split("\n")) {
    const current = CURRENT.exec(text);
    if (current !== null) {
      const [, key = "", statement = "", messageId = "", ref = ""] = current;
      last = { current: { statement, messageId, ref }, previous: [] };
      entries.set(key, last);
      continue;
    }
    const previous = PREVIOUS.exec(text);
    if (previous !== null && last !== undefined) {
      const [, statement = "", messageId = "", ref = ""] = previous;
      last.previous.push({ statement, messageId, ref });
    }
  }
  return entries;
}

/** One entry's lines: its current statement, then the ones it superseded. */
export function renderEntry(key: string, entry: Entry): string {
  return [`- ${key}: ${render(entry.current)}`, ...entry.previous.map((line) => `  previously: ${render(line)}`)].join("\n");
}

export function renderPage(path: string, entries: ReadonlyMap<string, Entry>): string {
  return [header(path), ...[...entries].map(([key, entry]) => renderEntry(key, entry))].join("\n");
}

export interface MergeResult {
  /** The page's new text; equal to the current one when nothing changed. */
  readonly content: string;
  readonly changed: boolean;
  /** The facts that became current on this page, in order (their sources are the new version's provenance). */
  readonly applied: readonly ExtractedFact[];
}

/**
 * Merges `facts` (all of one page, in the order they were said) into the page's current text
 * (undefined for a page that does not exist or was deleted).
 */
export function mergeFacts(path: string, current: string | undefined, facts: readonly ExtractedFact[]): MergeResult {
  const entries = parsePage(current ?? "");
  const applied: ExtractedFact[] = [];
  for (const fact of onPage(path, facts)) {
    const [source] = fact.sources;
    if (source === undefined) continue;
    const line: Line = { statement: oneLine(fact.statement), messageId: shownId(source.messageId), ref: source.eventHash.slice(0, REF_CHARS) };
    const entry = entries.get(fact.key);
    if (entry === undefined) {
      entries.set(fact.key, { current: line, previous: [] });
    } else {
      if (entry.current.ref === line.ref || entry.previous.some((p) => p.ref === line.ref)) continue;
      entry.previous = [entry.current, ...entry.previous].slice(0, MAX_PREVIOUS);
      entry.current = line;
      // Most recently updated last: the cap below drops the keys nothing has touched longest.
      entries.delete(fact.key);
      entries.set(fact.key, entry);
    }
    applied.push(fact);
  }
  while (entries.size > MAX_KEYS_PER_PAGE) {
    const oldest = entries.keys().next().value;
    if (oldest === undefined) break;
    entries.delete(oldest);
  }
  if (applied.length === 0 && current !== undefined) return { content: current, changed: false, applied };
  const content = renderPage(path, entries);
  return { content, changed: content !== current, applied };
}

/**
 * The facts of `path` that can still be on the page once all of them are merged: per key the
 * last MAX_PREVIOUS + 1, of the last MAX_KEYS_PER_PAGE keys. A fact the same batch would push off
 * the page at once is never applied, so merging the batch again finds every applied fact on the
 * page and changes nothing.
 */
function onPage(path: string, facts: readonly ExtractedFact[]): ExtractedFact[] {
  const mine = facts.filter((f) => f.page === path);
  const lastAt = new Map<string, number>();
  mine.forEach((f, i) => lastAt.set(f.key, i));
  const keptKeys = new Set([...lastAt].sort(([, a], [, b]) => a - b).slice(-MAX_KEYS_PER_PAGE).map(([key]) => key));
  const perKey = new Map<string, number>();
  const kept: ExtractedFact[] = [];
  for (let i = mine.length - 1; i >= 0; i--) {
    const fact = mine[i];
    if (fact === undefined || !keptKeys.has(fact.key)) continue;
    const seen = perKey.get(fact.key) ?? 0;
    if (seen > MAX_PREVIOUS) continue;
    perKey.set(fact.key, seen + 1);
    kept.push(fact);
  }
  return kept.reverse();
}

/** Facts grouped by page, each page's facts in slice order; pages in first-mention order. */
export function factsByPage(facts: readonly ExtractedFact[]): Map<string, ExtractedFact[]> {
  const pages = new Map<string, ExtractedFact[]>();
  for (const fact of facts) {
    const list = pages.get(fact.page);
    if (list === undefined) pages.set(fact.page, [fact]);
    else list.push(fact);
  }
  return pages;
}
