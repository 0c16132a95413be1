import { NO_SUBSTANTIVE_CONTENT, renderBoundaryBody } from "./compactor-output";
import type { Candidate } from "./offline-summarizer-candidates";
import { LINE_MAX_CHARS, OPEN_PREFIX, PREVIOUS_PREFIX, candidatesOf, cutAtWord, openThreadsOf } from "./offline-summarizer-candidates";
import type { PageVocabulary } from "./offline-summarizer-facts";
import { covers, isSalient, pageVocabulary, salienceOf, sameFact, significantWords } from "./offline-summarizer-facts";
import type { CompactionContent, Packet } from "./packet";
import { OUTPUT_CONTRACT } from "./packet";
import { renderEnvelope } from "./render";

/**
 * Foldline's own extractive compactor, used when no model key is configured. It is not a language
 * model and never claims to be one (its receipts name `foldline-extractive`): it copies sentences of
 * the history verbatim, each with its speaker and the turn it came from, chosen by what they state
 * (values, dates, names, decisions, commitments, preferences) and by the slice's recurring
 * vocabulary; a later statement of the same fact replaces an earlier one; a fact a recalled memory
 * page already holds becomes a pointer to that page instead of a line (seed 001's pointer-first
 * rule); questions nobody answered are listed as open threads.
 *
 * The boundary's body gets a budget proportional to the history it replaces (`summaryBudget`), so
 * a long slice keeps more than a short one. It is a pure function of the packet: the same packet
 * gives byte-identical output, so a retried run reproduces its result exactly. Its output always
 * has the shape a model's must have and goes through the same validator; it shrinks itself until
 * the boundary is smaller than what it replaces, which is impossible only when the packet replaces
 * fewer characters than the boundary envelope's fixed frame (the validator then reports
 * `not_smaller`, as it would for a model).
 */

export const OFFLINE_COMPACTOR = { provider: "foldline-extractive", model: "foldline-extractive-1" } as const;

/**
 * Share of the replaced characters (the frozen slice plus the previous boundary) the body may use.
 * Counting the previous boundary lets what older history established keep its room along the chain;
 * the body still converges, to about share / (1 − share) of one slice.
 */
const BUDGET_SHARE = 0.12;
/** A short slice still gets room for a few facts (the former fixed size of these summaries). */
const BUDGET_FLOOR = 600;
/** Lines kept by vocabulary alone, when nothing in the history states a fact. */
const DIGEST_LINES = 3;
/** Open threads may take at most this share of the budget: they are the ephemeral part. */
const THREAD_SHARE = 0.25;
const SHORT_LINE_MAX_CHARS = 100;
const NOTE_MAX_CHARS = 160;
const MAX_REFS = 50;
/** A page is pointed at by topic only when it shares at least this many significant words with the slice. */
const MIN_SHARED_WORDS = 2;
const NOTE_WORDS = 4;
/** The output contract's bound on a ref's path. */
const MAX_PATH_CHARS = 200;

/** Characters the boundary's body (summary, memory pointers, open threads) may take. */
export function summaryBudget(packet: Packet): number {
  return Math.min(packet.policy.maxSummaryChars, Math.max(BUDGET_FLOOR, Math.round(packet.sizes.replacedChars * BUDGET_SHARE)));
}

interface Line {
  readonly order: number;
  readonly score: number;
  readonly text: string;
}

interface Ref {
  readonly path: string;
  readonly note: string;
}

interface Page {
  readonly path: string;
  readonly vocabulary: PageVocabulary;
  /** Its significant words as written, for a pointer by topic. */
  readonly words: ReadonlySet<string>;
}

/**
 * The candidates a later one restates: the same fact about the same subjects, whatever its value
 * now. Only the latest statement is kept, so an update replaces the value it updates.
 */
function superseded(candidates: readonly Candidate[]): Set<number> {
  const bySubjects = new Map<string, Candidate[]>();
  for (const c of candidates) {
    const key = [...c.fact.subjects].sort().join(" ");
    const group = bySubjects.get(key);
    if (group === undefined) bySubjects.set(key, [c]);
    else group.push(c);
  }
  const out = new Set<number>();
  for (const group of bySubjects.values()) {
    for (let i = 0; i < group.length; i += 1) {
      const earlier = group[i];
      if (earlier === undefined) continue;
      for (let j = i + 1; j < group.length; j += 1) {
        const later = group[j];
        if (later !== undefined && sameFact(earlier.fact, later.fact)) {
          out.add(earlier.order);
          break;
        }
      }
    }
  }
  return out;
}

/** How much of the slice's recurring vocabulary a sentence carries, damped for length, in [0, 1]. */
function vocabularyScores(candidates: readonly Candidate[], frequency: ReadonlyMap<string, number>): Map<number, number> {
  const raw = candidates.map((c) => {
    let total = 0;
    for (const w of c.words) total += frequency.get(w) ?? 0;
    return c.words.length === 0 ? 0 : total / Math.sqrt(c.words.length);
  });
  const max = Math.max(1, ...raw);
  return new Map(candidates.map((c, i) => [c.order, (raw[i] ?? 0) / max]));
}

/** Recalled pages the output may name, in recall order. */
function pagesOf(packet: Packet): Page[] {
  const seen = new Set<string>();
  const pages: Page[] = [];
  for (const page of packet.memoryPages) {
    if (page.path === "" || page.path.length > MAX_PATH_CHARS || seen.has(page.path)) continue;
    seen.add(page.path);
    pages.push({ path: page.path, vocabulary: pageVocabulary(page.content), words: new Set(significantWords(page.content)) });
  }
  return pages;
}

const refLine = (ref: Ref): string => `- memory:${ref.path} — ${ref.note}`;
const MEMORY_HEADING = "\n\nMemory:".length;
const THREADS_HEADING = "\n\nOpen threads:".length;

/** What the choice has taken so far, and the characters it takes. */
interface Chosen {
  readonly lines: Line[];
  readonly refs: Ref[];
  used: number;
}

/** Takes a pointer if its page is not pointed at yet and it fits. */
function takeRef(chosen: Chosen, ref: Ref, budget: number): void {
  if (chosen.refs.length >= MAX_REFS || chosen.refs.some((r) => r.path === ref.path)) return;
  const cost = refLine(ref).length + 1 + (chosen.refs.length === 0 ? MEMORY_HEADING : 0);
  if (chosen.used + cost > budget) return;
  chosen.refs.push(ref);
  chosen.used += cost;
}

/**
 * Greedy by score within the budget: a fact a page holds costs its pointer (once per page; the
 * page speaks for the rest), any other its line. Then a page on the slice's topic that holds none
 * of its facts word for word still gets a pointer if there is room: it is where the agent finds
 * what the topic has established.
 */
function choose(pool: readonly { candidate: Candidate; line: Line }[], pages: readonly Page[], frequency: ReadonlyMap<string, number>, budget: number, used: number): Chosen {
  const chosen: Chosen = { lines: [], refs: [], used };
  for (const { candidate, line } of pool) {
    const page = pages.find((p) => covers(p.vocabulary, candidate.fact));
    if (page !== undefined) {
      takeRef(chosen, { path: page.path, note: cutAtWord(candidate.text, NOTE_MAX_CHARS) }, budget);
    } else if (chosen.used + line.text.length + 1 <= budget) {
      chosen.lines.push(line);
      chosen.used += line.text.length + 1;
    }
  }
  for (const page of pages) {
    const shared = [...page.words].filter((w) => frequency.has(w));
    if (shared.length < MIN_SHARED_WORDS) continue;
    shared.sort((a, b) => (frequency.get(b) ?? 0) - (frequency.get(a) ?? 0) || (a < b ? -1 : a > b ? 1 : 0));
    takeRef(chosen, { path: page.path, note: `slice mentions ${shared.slice(0, NOTE_WORDS).join(", ")}` }, budget);
  }
  return chosen;
}

// Longer than the house's ~60 lines: the draft (pinned line, lines, pointers, threads) is shared by
// the closures of the shrink loop below; split apart, they would pass all four back and forth.
export function offlineCompaction(packet: Packet): string {
  const projection = packet.outputMode === "projection";
  const budget = summaryBudget(packet);
  const candidates = candidatesOf(packet);
  if (candidates.length === 0) {
    return projection ? JSON.stringify({ summary: NO_SUBSTANTIVE_CONTENT, salientFacts: {} }) : NO_SUBSTANTIVE_CONTENT;
  }

  const salient = candidates.filter((c) => isSalient(c.fact));
  const gone = superseded(salient);
  const frequency = new Map<string, number>();
  for (const c of candidates) for (const w of c.words) frequency.set(w, (frequency.get(w) ?? 0) + 1);
  const vocabulary = vocabularyScores(candidates, frequency);
  const scoreOf = (c: Candidate): number => salienceOf(c.fact) + (vocabulary.get(c.order) ?? 0);
  const byScore = (a: Line, b: Line): number => b.score - a.score || a.order - b.order;

  // The previous boundary's first surviving line comes first and is the last to go, so the chain
  // stays connected ("Earlier: …" is never nested).
  const first = candidates.find((c) => c.carried && !gone.has(c.order));
  let pinned: Line | undefined = first === undefined ? undefined : { order: first.order, score: Number.POSITIVE_INFINITY, text: cutAtWord(`${PREVIOUS_PREFIX}${first.text}`, LINE_MAX_CHARS) };

  // Facts when there are any; when nothing states one, a thin digest of the recurring vocabulary.
  const scored = (list: readonly Candidate[]) => list.map((c) => ({ candidate: c, line: { order: c.order, score: scoreOf(c), text: c.text } })).sort((a, b) => byScore(a.line, b.line));
  const pool = (salient.length > 0 ? scored(salient.filter((c) => !gone.has(c.order))) : scored(candidates).slice(0, DIGEST_LINES)).filter((s) => s.candidate.order !== first?.order);

  let threads = openThreadsOf(packet);
  const threadChars = (list: readonly string[]): number => (list.length === 0 ? 0 : (projection ? THREADS_HEADING : 0) + list.reduce((n, t) => n + t.length + (projection ? 3 : OPEN_PREFIX.length + 1), 0));
  while (threads.length > 0 && threadChars(threads) > budget * THREAD_SHARE) threads = threads.slice(1);

  const chosen = choose(pool, projection ? pagesOf(packet) : [], frequency, budget, (pinned?.text.length ?? 0) + threadChars(threads));
  let { lines, refs } = chosen;
  // A summary has at least one line: the strongest fact, even if a page holds it or it must be cut.
  const strongest = pool[0]?.line;
  if (pinned === undefined && lines.length === 0 && strongest !== undefined) lines = [strongest];

  const compose = (): { summary: string; salientFacts: CompactionContent["salientFacts"] } => {
    const body = [...(pinned === undefined ? [] : [pinned]), ...[...lines].sort((a, b) => a.order - b.order)].map((l) => l.text);
    if (!projection) body.push(...threads.map((t) => `${OPEN_PREFIX}${t}`));
    return { summary: body.join("\n"), salientFacts: { memoryRefs: refs, openThreads: projection ? threads : [], abandonedDirections: [] } };
  };
  const fits = (): boolean => {
    const { summary, salientFacts } = compose();
    if (summary.length > packet.policy.maxSummaryChars) return false;
    const content: CompactionContent = { contract: OUTPUT_CONTRACT, mode: packet.outputMode, summary, preview: "", salientFacts, degraded: false };
    const body = renderBoundaryBody(content);
    return body.length <= budget && renderEnvelope("boundary", body).content.length < packet.sizes.replacedChars;
  };
  const lineCount = (): number => lines.length + (pinned === undefined ? 0 : 1);
  const dropWeakestLine = (): void => {
    const weakest = [...lines].sort(byScore).at(-1);
    lines = lines.filter((l) => l !== weakest);
  };
  const cut = (max: (l: Line) => number): void => {
    lines = lines.map((l) => ({ ...l, text: cutAtWord(l.text, max(l)) }));
    if (pinned !== undefined) pinned = { ...pinned, text: cutAtWord(pinned.text, max(pinned)) };
  };

  // Shrink in order of what matters least: open threads, then the weakest lines, then line length,
  // then pointers, then the last line itself. Every step removes characters, so this ends; it
  // stops at the first state that fits.
  while (!fits() && threads.length > 0) threads = threads.slice(1);
  while (!fits() && lineCount() > 1 && lines.length > 0) dropWeakestLine();
  if (!fits()) cut(() => SHORT_LINE_MAX_CHARS);
  while (!fits() && refs.length > 0) refs = refs.slice(0, -1);
  while (!fits() && lineCount() === 1 && ((lines[0] ?? pinned)?.text.length ?? 0) > 24) cut((l) => Math.ceil(l.text.length / 2));

  const { summary, salientFacts } = compose();
  if (!projection) return summary;
  // Seed 001: empty lists are left out rather than sent empty.
  const facts: Record<string, unknown> = {};
  if (salientFacts.memoryRefs.length > 0) facts["memoryRefs"] = salientFacts.memoryRefs;
  if (salientFacts.openThreads.length > 0) facts["openThreads"] = salientFacts.openThreads;
  return JSON.stringify({ summary, salientFacts: facts });
}
