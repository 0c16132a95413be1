// The LoCoMo data set as the LoCoMo section (lib/locomo-phase.mjs) reads it: the prepared
// conversations in bench/data/locomo (CC BY-NC 4.0; made by its prepare.mjs), their shape, and how
// a turn and a session's date become a Telegram message. Changes with the data set's format.
// conv-26 and conv-30 are held out for acceptance: a file of theirs is refused, never read.
import { readFileSync, readdirSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { HELD_OUT } from "../data/locomo/prepare.mjs";

const DATA_DIR = join(dirname(fileURLToPath(import.meta.url)), "..", "data", "locomo");
export const CATEGORIES = { 1: "multi-hop", 2: "temporal", 3: "open-domain", 4: "single-hop", 5: "adversarial" };

/** @typedef {{ speaker: string, dia_id: string, text: string, blip_caption?: string }} RawTurn */
/** @typedef {{ id: string, speaker_a: string, speaker_b: string, sessions: { session: number, date_time: string, turns: RawTurn[] }[], qa: { question: string, evidence: string[], category: number }[], dropped: { questions: unknown[], evidenceIds: string[], repairedIds: unknown[], splitStrings: string[] } }} Locomo */
/** @typedef {{ diaId: string, session: number, speaker: string, text: string, rendered: string, messageId: string, seq: number, index: number }} Turn */

/** The prepared conversations, in id order; a held-out id is refused, never read. @param {boolean} quick */
export function loadLocomo(quick) {
  const files = readdirSync(DATA_DIR)
    .map((name) => /^conv-(\d+)\.json$/.exec(name))
    .filter((m) => m !== null)
    .map((m) => ({ id: `conv-${Number(m[1])}`, file: m[0], n: Number(m[1]) }))
    .sort((a, b) => a.n - b.n);
  const held = files.filter((f) => HELD_OUT.has(f.id));
  if (held.length > 0) throw new Error(`bench/data/locomo holds ${held.map((f) => f.id).join(", ")}, held out for acceptance: remove it`);
  if (files.length === 0) throw new Error(`no conv-<n>.json in ${DATA_DIR}: run bench/data/locomo/prepare.mjs`);
  return files.slice(0, quick ? 2 : files.length).map((f) => ({ n: f.n, data: /** @type {Locomo} */ (JSON.parse(readFileSync(join(DATA_DIR, f.file), "utf8"))) }));
}

const MONTHS = ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november", "december"];

/** "11:01 am on 17 December, 2022" → Unix seconds (read as UTC). @param {string} text */
export function sessionStart(text) {
  const m = /^(\d{1,2}):(\d{2})\s*(am|pm) on (\d{1,2}) ([A-Za-z]+),? (\d{4})$/i.exec(text.trim());
  const month = m === null ? -1 : MONTHS.indexOf(String(m[5]).toLowerCase());
  if (m === null || month < 0) throw new Error(`unreadable LoCoMo session date-time ${JSON.stringify(text)}`);
  const hour = (Number(m[1]) % 12) + (String(m[3]).toLowerCase() === "pm" ? 12 : 0);
  return Date.UTC(Number(m[6]), month, Number(m[4]), hour, Number(m[2])) / 1000;
}

/** The text a turn is sent as: its text, and the shared photo's caption when there is one. @param {RawTurn} t */
export const turnText = (t) => (t.blip_caption === undefined ? t.text : `${t.text} [photo: ${t.blip_caption}]`);
