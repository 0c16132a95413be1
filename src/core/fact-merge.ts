import type { ExtractedFact, FactSource } from "./fact-extraction";
import { oneLine } from "./fact-extraction";

/**
 * The merge rule of extracted pages, and the one owner of their text format. A page holds one
 * current statement per fact key: the one stated by the latest message of the conversation, in
 * the log's order (seq), whatever order the slices' extractions were merged in; the statements it
 * superseded stay on the page as "previously", newest first (and, whole, in the page's version
 * history). Seqs on one page are comparable because a page is one conversation's
 * (migrations/shard/0016): they count positions in one log.
 *
 * Format (one fact per block, every line one line of text):
 *
 *     Extracted memory <path>: facts taken from conversation history, newest value first.
 *     - <key>: <statement> (msg <message id>, seq <n>, ref <12 hex of the source event's hash>)
 *       previously: <statement> (msg <message id>, seq <n>, ref <…>)
 *
 * Lines written before the seq was recorded (`(msg <id>, ref <hex>)`) are read, and written back,
 * as they are, and count as older than any line with a seq.
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
  /** The message's seq in the conversation's log; absent on lines written before it was recorded. */
  readonly seq?: number;
}

export interface Entry {
  current: Line;
  previous: Line[];
}

export const REF_CHARS = 12;

const header = (path: string): string => `Extracted memory ${path}: facts taken from conversation history, newest value first.`;
// The suffix after a statement; a shown message id has no "(),", so ", seq" and ", ref" end it.
const SUFFIX = String.raw`\(msg (.+?)(?:, seq ([1-9]\d{0,14}))?, ref ([0-9a-f]{${REF_CHARS}})\)$`;
const CURRENT = new RegExp(`^- ([a-z0-9]+(?:-[a-z0-9]+)*): (.*) ${SUFFIX}`);
const PREVIOUS = new RegExp(`^ {2}previously: (.*) ${SUFFIX}`);

/** A message id as the page shows it: one line, without the characters its suffix is parsed by. */
export const shownId = (id: string): string => oneLine(id, 64).replace(/[(),]/g, "_") || "_";

const render = (line: Line): string => `${line.statement} (msg ${line.messageId}${line.seq === undefined ? "" : `, seq ${line.seq}`}, ref ${line.ref})`;

function lineOf(statement: string, messageId: string, seq: string | undefined, ref: string): Line {
  return { statement, messageId, ref, ...(seq === undefined ? {} : { seq: Number(seq) }) };
}

/** The entries of a page's text, in page order; lines that are not in the format are ignored. */
export function parsePage(content: string): Map<string, Entry> {
  const entries = new Map<string, Entry>();
  let last: Entry | undefined;
  for (const text of content.split("\n")) {
    const current = CURRENT.exec(text);
    if (current !== null) {
      const [, key = "", statement = "", messageId = "", seq, ref = ""] = current;
      last = { current: lineOf(statement, messageId, seq, ref), previous: [] };
      entries.set(key, last);
      continue;
    }
    const previous = PREVIOUS.exec(text);
    if (previous !== null && last !== undefined) {
      const [, statement = "", messageId = "", seq, ref = ""] = previous;
      last.previous.push(lineOf(statement, messageId, seq, ref));
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

const HEADER = /^Extracted memory \S+: facts taken from conversation history, newest value first\.$/;
const TAG = new RegExp(` ${SUFFIX}`);

/**
 * The words of a page a search matches (its terms since migrations/shard/0039): each fact's key
 * and statements, without what the format adds to every page and line, which says nothing of a
 * fact: the heading (the path is indexed on its own), "previously:" and each line's source tag
 * (message id, seq and hash prefix, which the sources keep). A line not in the format stays whole.
 */
export function pageTermsText(content: string): string {
  return content
    .split("\n")
    .filter((line, i) => i > 0 || !HEADER.test(line))
    .map((line) => line.replace(/^ {2}previously: /, "").replace(TAG, ""))
    .join("\n");
}

export interface MergeResult {
  /** The page's new text; equal to the current one when nothing changed. */
  readonly content: string;
  readonly changed: boolean;
  /** The facts written to the page, current or previously, in slice order. */
  readonly applied: readonly ExtractedFact[];
  /**
   * Per key whose current statement this merge changed, the fact now current: its sources are the
   * new version's provenance for the key. A fact that went only under "previously" is not here.
   */
  readonly current: ReadonlyMap<string, ExtractedFact>;
}

/** The source a fact's line cites: its latest message. */
function newestSource(fact: ExtractedFact): FactSource | undefined {
  return fact.sources.reduce<FactSource | undefined>((newest, source) => (newest === undefined || source.seq > newest.seq ? source : newest), undefined);
}

/** Whether `line` is known to come from a later message than `than`: a line without a seq never is. */
const laterThan = (line: Line, than: Line): boolean => line.seq !== undefined && than.seq !== undefined && line.seq > than.seq;

/**
 * Where `line` goes among an entry's lines (current first): right below the last line of a later
 * message, so the lines stay in message order; at 0 it becomes current. At an equal seq the line
 * merged later goes above: within a slice, the fact said later.
 */
function placeOf(lines: readonly Line[], line: Line): number {
  let place = 0;
  lines.forEach((other, i) => {
    if (laterThan(other, line)) place = i + 1;
  });
  return place;
}

/**
 * Merges `facts` (all of one page, in the order they were said) into the page's current text
 * (undefined for a page that does not exist or was deleted).
 */
export function mergeFacts(path: string, current: string | undefined, facts: readonly ExtractedFact[]): MergeResult {
  const entries = parsePage(current ?? "");
  const applied: ExtractedFact[] = [];
  const becameCurrent = new Map<string, ExtractedFact>();
  const kept = onPage(path, facts);
  for (const fact of kept) {
    const source = newestSource(fact);
    if (source === undefined) continue;
    const line: Line = { statement: oneLine(fact.statement), messageId: shownId(source.messageId), ref: source.eventHash.slice(0, REF_CHARS), seq: source.seq };
    const entry = entries.get(fact.key);
    if (entry === undefined) {
      entries.set(fact.key, { current: line, previous: [] });
      becameCurrent.set(fact.key, fact);
    } else {
      const lines = [entry.current, ...entry.previous];
      if (lines.some((l) => l.ref === line.ref)) continue;
      const place = placeOf(lines, line);
      // Below every line the page keeps: it would fall off at once, and come back on every replay.
      if (place > MAX_PREVIOUS) continue;
      lines.splice(place, 0, line);
      const [first = line, ...rest] = lines;
      entry.current = first;
      entry.previous = rest.slice(0, MAX_PREVIOUS);
      if (place === 0) becameCurrent.set(fact.key, fact);
      // Most recently updated last: the cap below drops the keys nothing has touched longest.
      entries.delete(fact.key);
      entries.set(fact.key, entry);
    }
    applied.push(fact);
  }
  // A key this batch speaks of stays, though nothing in it applied (all its facts were on the page
  // or older than what it keeps): dropped, its facts would come back as new on the next replay.
  const spoken = new Set(kept.map((f) => f.key));
  for (const key of [...entries.keys()]) {
    if (entries.size <= MAX_KEYS_PER_PAGE) break;
    if (!spoken.has(key)) entries.delete(key);
  }
  if (applied.length === 0 && current !== undefined) return { content: current, changed: false, applied, current: becameCurrent };
  const content = renderPage(path, entries);
  return { content, changed: content !== current, applied, current: becameCurrent };
}

/**
 * The facts of `path` that can still be on the page once all of them are merged: per key, of the
 * facts one message states the last (one source event, one line), and of those the MAX_PREVIOUS + 1
 * of the latest messages, of the last MAX_KEYS_PER_PAGE keys; in slice order. A fact the same batch
 * would push off the page at once is never applied, so merging the batch again finds every applied
 * fact on the page and changes nothing.
 */
function onPage(path: string, facts: readonly ExtractedFact[]): ExtractedFact[] {
  const mine = facts.filter((f) => f.page === path).map((fact, at) => ({ fact, at, seq: newestSource(fact)?.seq ?? 0, ref: newestSource(fact)?.eventHash.slice(0, REF_CHARS) ?? "" }));
  const lastAt = new Map<string, number>();
  for (const { fact, at } of mine) lastAt.set(fact.key, at);
  const keptKeys = new Set([...lastAt].sort(([, a], [, b]) => a - b).slice(-MAX_KEYS_PER_PAGE).map(([key]) => key));
  const lastOfEvent = new Map<string, (typeof mine)[number]>();
  for (const said of mine) if (keptKeys.has(said.fact.key)) lastOfEvent.set(`${said.fact.key}\n${said.ref}`, said);
  const byKey = new Map<string, (typeof mine)[number][]>();
  for (const said of lastOfEvent.values()) byKey.set(said.fact.key, [...(byKey.get(said.fact.key) ?? []), said]);
  return [...byKey.values()]
    .flatMap((said) => said.sort((a, b) => b.seq - a.seq || b.at - a.at).slice(0, MAX_PREVIOUS + 1))
    .sort((a, b) => a.at - b.at)
    .map(({ fact }) => fact);
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
