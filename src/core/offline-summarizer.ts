import { NO_SUBSTANTIVE_CONTENT, renderBoundaryBody } from "./compactor-output";
import type { CompactionContent, Packet } from "./packet";
import { OUTPUT_CONTRACT } from "./packet";
import type { Author } from "./events";
import { displayName } from "./names";
import { renderEnvelope } from "./render";

/**
 * Foldline's own extractive compactor, used when no model key is configured. It is not a language
 * model and never claims to be one (its receipts name `foldline-extractive`): it picks the most
 * informative sentences of the slice by term frequency, keeps them in chronological order with
 * their speaker, points at recalled memory pages that share the slice's vocabulary, and lists
 * questions nobody answered yet.
 *
 * It is a pure function of the packet: the same packet gives byte-identical output, so a retried
 * run reproduces its result exactly. Its output always has the shape a model's must have and goes
 * through the same validator; it shrinks itself until the boundary is smaller than what it
 * replaces, which is impossible only when the packet replaces fewer characters than the boundary
 * envelope's fixed frame (the validator then reports `not_smaller`, as it would for a model).
 */

export const OFFLINE_COMPACTOR = { provider: "foldline-extractive", model: "foldline-extractive-1" } as const;

/** Seed 001 asks for 3–8 short lines. */
const MAX_LINES = 8;
const MIN_LINES_BEFORE_THREADS_GO = 3;
const LINE_MAX_CHARS = 200;
const SHORT_LINE_MAX_CHARS = 100;
const MAX_OPEN_THREADS = 3;
const MAX_REFS = 50;
/** A page is pointed at only when it shares at least this many significant words with the slice. */
const MIN_SHARED_WORDS = 2;
const NOTE_WORDS = 4;
const PREVIOUS_PREFIX = "Earlier: ";
const OPEN_PREFIX = "Open: ";

/** Function words and chat filler: frequent everywhere, so they say nothing about this slice. */
const STOPWORDS = new Set(
  (
    "the and for are but not you all any can had her was one our out day get has him his how man new now old see two way who " +
    "boy did its let put say she too use that with have this will your from they know want been good much some time very when " +
    "come here just like long make many more only over such take than them well were what where which while would there their " +
    "these those then into also about after again against because before being below between both during each few further " +
    "once other same should own under until why yes yeah yep nope okay ok lol haha hah hehe hmm umm thanks thank thx pls " +
    "please sure cool nice great could might must shall does doing done having i'm i've i'd i'll you're you've you'll we're " +
    "we've they're it's that's there's what's let's don't doesn't didn't can't won't isn't aren't wasn't weren't haven't " +
    "hasn't hadn't wouldn't shouldn't couldn't hey hello bye goodbye morning evening night today tomorrow yesterday really " +
    "actually maybe still even just got going gonna wanna thing things stuff something anything nothing everything someone " +
    "anyone everyone lot lots bit kind sort able via per etc off too yet ever never always sometimes often"
  ).split(" "),
);

const WORD = /[\p{L}\p{M}]+(?:['’][\p{L}\p{M}]+)*/gu;

/** Lower-cased words of three letters or more that are not stopwords. */
function significantWords(text: string): string[] {
  const words: string[] = [];
  for (const match of text.matchAll(WORD)) {
    const word = match[0].toLowerCase().replaceAll("’", "'");
    if (word.length >= 3 && !STOPWORDS.has(word)) words.push(word);
  }
  return words;
}

/** Cut at a word boundary to at most `max` characters, marking the cut. */
function cutAtWord(text: string, max: number): string {
  if (text.length <= max) return text;
  const room = text.slice(0, max - 1);
  const lastSpace = room.search(/\s\S*$/);
  return `${(lastSpace > 0 ? room.slice(0, lastSpace) : room).trimEnd()}…`;
}

function sentences(text: string): string[] {
  return text
    .split(/\n+|(?<=[.!?])\s+/)
    .map((s) => s.replace(/\s+/g, " ").trim())
    .filter((s) => s !== "");
}

interface Candidate {
  /** Position in the history: amendments first (they correct older history), then the slice in order. */
  readonly order: number;
  readonly speaker: string;
  readonly sentence: string;
  readonly words: ReadonlySet<string>;
}

interface Line {
  readonly order: number;
  readonly score: number;
  readonly text: string;
}

/**
 * Who said a line, as short as it can be and still one safe line: the username, else the name as it
 * may be shown (no controls or line breaks, so a name cannot start a forged line), else the id.
 */
const speakerOf = (author: Author): string => author.username ?? (author.name === undefined ? undefined : displayName(author.name)) ?? author.id;

function candidatesOf(packet: Packet): Candidate[] {
  const raw: { speaker: string; text: string }[] = [
    ...packet.amendments.flatMap((a) => (a.text === null || a.kind === "deleted" ? [] : [{ speaker: `corrected [${a.turnId}]`, text: a.text }])),
    ...packet.frozen.turns.map((t) => ({ speaker: `@${speakerOf(t.author)}`, text: t.text })),
  ];
  const candidates: Candidate[] = [];
  for (const { speaker, text } of raw) {
    for (const sentence of sentences(text)) {
      const words = new Set(significantWords(sentence));
      if (words.size > 0) candidates.push({ order: candidates.length, speaker, sentence, words });
    }
  }
  return candidates;
}

/**
 * The previous boundary's summary lines, carried forward so what older history established can
 * survive this run: its first line always (the chain stays connected; "Earlier: …" is not nested),
 * the others competing with the new slice's sentences for the room. Open threads are not carried:
 * they are recomputed from the slice.
 */
function previousLines(packet: Packet): string[] {
  const summary = packet.previousBoundary?.body.trim().split("\n\n", 1)[0] ?? "";
  const lines: string[] = [];
  for (const raw of summary.split("\n")) {
    let line = raw.trim();
    while (line.startsWith(PREVIOUS_PREFIX)) line = line.slice(PREVIOUS_PREFIX.length).trimStart();
    if (line === "" || line === NO_SUBSTANTIVE_CONTENT || line.startsWith(OPEN_PREFIX)) continue;
    lines.push(line);
  }
  return lines;
}

interface Ref {
  readonly path: string;
  readonly note: string;
  readonly words: ReadonlySet<string>;
}

/** Recalled pages that share the slice's significant vocabulary, in recall order. */
function memoryRefsFor(packet: Packet, frequency: ReadonlyMap<string, number>): Ref[] {
  const refs: Ref[] = [];
  const seen = new Set<string>();
  for (const page of packet.memoryPages) {
    // The output contract bounds a ref's path; a page it cannot name is simply not pointed at.
    if (page.path === "" || page.path.length > 200 || seen.has(page.path) || refs.length >= MAX_REFS) continue;
    const words = new Set(significantWords(page.content));
    const shared = [...words].filter((w) => frequency.has(w));
    if (shared.length < MIN_SHARED_WORDS) continue;
    shared.sort((a, b) => (frequency.get(b) ?? 0) - (frequency.get(a) ?? 0) || (a < b ? -1 : a > b ? 1 : 0));
    seen.add(page.path);
    refs.push({ path: page.path, note: `slice mentions ${shared.slice(0, NOTE_WORDS).join(", ")}`, words });
  }
  return refs;
}

/** User questions that no assistant turn followed within the slice: the thread is still open. */
function openThreadsOf(packet: Packet): string[] {
  const turns = packet.frozen.turns;
  const threads: string[] = [];
  turns.forEach((turn, i) => {
    if (turn.role !== "user" || !turn.text.trim().endsWith("?")) return;
    if (turns.slice(i + 1).some((later) => later.role === "assistant")) return;
    const question = sentences(turn.text).findLast((s) => s.endsWith("?")) ?? "";
    if (significantWords(question).length === 0) return;
    threads.push(cutAtWord(`@${speakerOf(turn.author)} asked: ${question}`, LINE_MAX_CHARS));
  });
  return threads.slice(-MAX_OPEN_THREADS);
}

/** Score by how much of the slice's recurring vocabulary a sentence carries, damped for length. */
function scoreOf(candidate: Candidate, frequency: ReadonlyMap<string, number>, refs: readonly Ref[]): number {
  let total = 0;
  for (const word of candidate.words) total += frequency.get(word) ?? 0;
  const score = total / Math.sqrt(candidate.words.size);
  // Pointer first (seed 001): a sentence a referenced page already holds is restated only if
  // nothing else deserves the room.
  const covered = refs.some((ref) => {
    let inPage = 0;
    for (const word of candidate.words) if (ref.words.has(word)) inPage += 1;
    return inPage * 3 >= candidate.words.size * 2;
  });
  return covered ? score / 4 : score;
}

export function offlineCompaction(packet: Packet): string {
  const projection = packet.outputMode === "projection";
  const candidates = candidatesOf(packet);
  const frequency = new Map<string, number>();
  for (const c of candidates) for (const w of significantWords(c.sentence)) frequency.set(w, (frequency.get(w) ?? 0) + 1);

  const carried = previousLines(packet);
  for (const line of carried) for (const w of significantWords(line)) frequency.set(w, (frequency.get(w) ?? 0) + 1);
  if (candidates.length === 0 && carried.length === 0) {
    return projection ? JSON.stringify({ summary: NO_SUBSTANTIVE_CONTENT, salientFacts: {} }) : NO_SUBSTANTIVE_CONTENT;
  }

  let refs = projection ? memoryRefsFor(packet, frequency) : [];
  let threads = openThreadsOf(packet);
  // Carried lines come before the slice in time, in their order; they are scored like the slice's
  // sentences, over the vocabulary of both.
  const [first, ...others] = carried;
  const ranked = [
    ...others.map((text, i) => ({ order: i - others.length, score: scoreOf({ order: 0, speaker: "", sentence: text, words: new Set(significantWords(text)) }, frequency, refs), text: cutAtWord(text, LINE_MAX_CHARS) })),
    ...candidates.map((c) => ({ order: c.order, score: scoreOf(c, frequency, refs), text: cutAtWord(`${c.speaker}: ${c.sentence}`, LINE_MAX_CHARS) })),
  ]
    .filter((line) => Number.isFinite(line.score) && line.score > 0)
    .sort((a, b) => b.score - a.score || a.order - b.order);
  // The previous boundary's first line comes first in time and is the last to go.
  const prefix: Line[] = first === undefined ? [] : [{ order: -others.length - 1, score: Number.POSITIVE_INFINITY, text: cutAtWord(`${PREVIOUS_PREFIX}${first}`, LINE_MAX_CHARS) }];
  let lines: Line[] = [...prefix, ...ranked.slice(0, MAX_LINES - prefix.length)];

  const compose = (): { summary: string; salientFacts: CompactionContent["salientFacts"] } => {
    const body = [...lines].sort((a, b) => a.order - b.order).map((l) => l.text);
    if (!projection) body.push(...threads.map((t) => `Open: ${t}`));
    return {
      summary: body.join("\n"),
      salientFacts: { memoryRefs: refs.map((r) => ({ path: r.path, note: r.note })), openThreads: projection ? threads : [], abandonedDirections: [] },
    };
  };
  const fits = (): boolean => {
    const { summary, salientFacts } = compose();
    if (summary.length > packet.policy.maxSummaryChars) return false;
    const content: CompactionContent = { contract: OUTPUT_CONTRACT, mode: packet.outputMode, summary, preview: "", salientFacts, degraded: false };
    return renderEnvelope("boundary", renderBoundaryBody(content)).content.length < packet.sizes.replacedChars;
  };
  const dropWeakestLine = (): void => {
    let weakest = 0;
    lines.forEach((line, i) => {
      const w = lines[weakest];
      if (w !== undefined && (line.score < w.score || (line.score === w.score && line.order > w.order))) weakest = i;
    });
    lines = lines.filter((_, i) => i !== weakest);
  };

  // Shrink in order of what matters least: extra lines, then open threads, then line length, then
  // all but one line, then pointers, then the last line itself. Every step removes characters, so
  // this ends; it stops at the first state that fits.
  while (!fits() && lines.length > MIN_LINES_BEFORE_THREADS_GO) dropWeakestLine();
  while (!fits() && threads.length > 0) threads = threads.slice(1);
  if (!fits()) lines = lines.map((l) => ({ ...l, text: cutAtWord(l.text, SHORT_LINE_MAX_CHARS) }));
  while (!fits() && lines.length > 1) dropWeakestLine();
  while (!fits() && refs.length > 0) refs = refs.slice(0, -1);
  while (!fits() && lines.length === 1 && (lines[0]?.text.length ?? 0) > 24) {
    lines = lines.map((l) => ({ ...l, text: cutAtWord(l.text, Math.ceil(l.text.length / 2)) }));
  }

  const { summary, salientFacts } = compose();
  if (!projection) return summary;
  // Seed 001: empty lists are left out rather than sent empty.
  const facts: Record<string, unknown> = {};
  if (salientFacts.memoryRefs.length > 0) facts["memoryRefs"] = salientFacts.memoryRefs;
  if (salientFacts.openThreads.length > 0) facts["openThreads"] = salientFacts.openThreads;
  return JSON.stringify({ summary, salientFacts: facts });
}
