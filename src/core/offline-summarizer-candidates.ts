import { NO_SUBSTANTIVE_CONTENT } from "./compactor-output";
import type { Author } from "./events";
import { splitLines } from "./line-breaks";
import { displayName } from "./names";
import type { Fact } from "./offline-summarizer-facts";
import { factOf, significantWords, valuesOf } from "./offline-summarizer-facts";
import type { Packet } from "./packet";

/**
 * The sentences the offline compactor chooses from, oldest first: what the previous boundary
 * carried (less what absorbed amendments deleted or corrected), the corrected text of those
 * amendments, then the frozen slice. Every line it writes names the turn it came from
 * (`[s12] @ada: …`), so a later run can tell which lines an edit or a deletion of that turn voids.
 */

export const LINE_MAX_CHARS = 200;
export const PREVIOUS_PREFIX = "Earlier: ";
export const OPEN_PREFIX = "Open: ";
const MAX_OPEN_THREADS = 3;

/** A line's turn tag: internal turn ids (`s<seq>`, `p<seq>`), as the amendment envelope names them. */
const TAGGED = /^\[([sp]\d+)\] (.*)$/s;
const SPOKEN = /^(?:@(\S+?)(?: \((?:edited|added)\))?|\((?:edited|added)\)): /;

export interface Candidate {
  /** Position in the history: carried lines, then amendments, then the slice. */
  readonly order: number;
  readonly turnId: string | null;
  /** The line as the summary writes it. */
  readonly text: string;
  readonly words: readonly string[];
  readonly fact: Fact;
  /** Carried from the previous boundary. */
  readonly carried: boolean;
}

/** Cut at a word boundary to at most `max` characters, marking the cut. */
export function cutAtWord(text: string, max: number): string {
  if (text.length <= max) return text;
  const room = text.slice(0, max - 1);
  const lastSpace = room.search(/\s\S*$/);
  return `${(lastSpace > 0 ? room.slice(0, lastSpace) : room).trimEnd()}…`;
}

export function sentences(text: string): string[] {
  return text
    .split(/(?<=[.!?])\s+/)
    .flatMap(splitLines)
    .map((s) => s.replace(/\s+/g, " ").trim())
    .filter((s) => s !== "");
}

/**
 * Who said a line, as short as it can be and still one safe line: the username, else the name as it
 * may be shown (no controls or line breaks, so a name cannot start a forged line), else the id.
 */
const speakerOf = (author: Author): string => author.username ?? (author.name === undefined ? undefined : displayName(author.name)) ?? author.id;

/** A line worth a place: it has a word that says something, or a value. */
const meaningful = (sentence: string): boolean => significantWords(sentence).length > 0 || valuesOf(sentence).size > 0;

function candidate(order: number, turnId: string | null, speaker: string, body: string, carried: boolean): Candidate {
  const sentence = body.replace(SPOKEN, "");
  const text = cutAtWord(turnId === null ? body : `[${turnId}] ${body}`, LINE_MAX_CHARS);
  return { order, turnId, text, words: significantWords(sentence), fact: factOf(sentence, speaker), carried };
}

interface CarriedLine {
  readonly turnId: string | null;
  /** The line without its tag: `@ada: …`, or whatever an untagged (model-written) line says. */
  readonly body: string;
  readonly speaker: string;
}

/**
 * The previous boundary's summary lines. Open threads are not carried (they are recomputed from
 * the slice) and "Earlier: " is not nested.
 */
function carriedLines(packet: Packet): CarriedLine[] {
  const summary = packet.previousBoundary?.body.trim().split("\n\n", 1)[0] ?? "";
  const lines: CarriedLine[] = [];
  for (const raw of summary.split("\n")) {
    let line = raw.trim();
    while (line.startsWith(PREVIOUS_PREFIX)) line = line.slice(PREVIOUS_PREFIX.length).trimStart();
    if (line === "" || line === NO_SUBSTANTIVE_CONTENT || line.startsWith(OPEN_PREFIX)) continue;
    const tagged = TAGGED.exec(line);
    const body = tagged?.[2] ?? line;
    lines.push({ turnId: tagged?.[1] ?? null, body, speaker: SPOKEN.exec(body)?.[1] ?? "" });
  }
  return lines;
}

export function candidatesOf(packet: Packet): Candidate[] {
  const candidates: Candidate[] = [];
  const add = (turnId: string | null, speaker: string, body: string, carried: boolean): void => {
    const c = candidate(candidates.length, turnId, speaker, body, carried);
    if (meaningful(body.replace(SPOKEN, ""))) candidates.push(c);
  };
  // An absorbed amendment voids what the chain carried of its turn: a deletion leaves nothing of
  // it, an edit leaves only its corrected text.
  const amended = new Set(packet.amendments.filter((a) => a.kind !== "added").map((a) => a.turnId));
  const carried = carriedLines(packet);
  const speakers = new Map<string, string>();
  for (const line of carried) {
    if (line.turnId !== null && line.speaker !== "") speakers.set(line.turnId, line.speaker);
    if (line.turnId === null || !amended.has(line.turnId)) add(line.turnId, line.speaker, line.body, true);
  }
  for (const a of packet.amendments) {
    if (a.text === null || a.kind === "deleted") continue;
    const speaker = speakers.get(a.turnId);
    const who = `${speaker === undefined ? "" : `@${speaker} `}(${a.kind})`;
    for (const s of sentences(a.text)) add(a.turnId, speaker ?? "", `${who}: ${s}`, false);
  }
  for (const turn of packet.frozen.turns) {
    const speaker = speakerOf(turn.author);
    for (const s of sentences(turn.text)) add(turn.id, speaker, `@${speaker}: ${s}`, false);
  }
  return candidates;
}

/** User questions that no assistant turn followed within the slice: the thread is still open. */
export function openThreadsOf(packet: Packet): string[] {
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
