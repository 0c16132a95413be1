#!/usr/bin/env node
// Makes the compact LoCoMo copy the benchmark's LoCoMo section reads (bench/lib/locomo-phase.mjs)
// from a directory of the original files (snap-research/locomo, data/locomo10.zip, unzipped:
// data/multimodal_dialog/locomo10_v2 holds one `<n>.json` per conversation, conv-<n>). See
// README.md beside this file for the licence, the attribution and what is changed.
//
//   npx node bench/data/locomo/prepare.mjs <dir with 41.json, 42.json, …> [out dir, default: this directory]
//
// conv-26 and conv-30 are held out for acceptance: they are skipped by their id, before their
// file is opened, whether or not the directory holds them.
//
// Kept: the two speakers; every session's number, date-time and turns (speaker, dia_id, text, and
// blip_caption when the turn shares a photo); every question with its evidence ids and category.
// Dropped: answers (answer, adversarial_answer), image urls and search queries of shared photos,
// session summaries, observations and event summaries.
//
// Evidence ids are cleaned: a string naming several ids ("D8:6; D9:17") is split on `;`, `,` and
// spaces; an id written with a stray colon or leading zeros ("D:11:26", "D30:05") is read as the id
// it spells (D11:26, D30:5) when that turn exists; an id that names no turn is dropped, and a
// question left without evidence is dropped. Each output file records what was dropped.
import { existsSync, readFileSync, readdirSync, writeFileSync } from "node:fs";
import { basename, dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

/** Held out for acceptance: never read, run or tuned on. */
export const HELD_OUT = new Set(["conv-26", "conv-30"]);

const HERE = dirname(fileURLToPath(import.meta.url));

/**
 * The evidence ids a raw evidence string names, each resolved against the turns: `{ kept, repaired, dropped }`.
 * @param {string[]} raw @param {Set<string>} turnIds
 */
export function cleanEvidence(raw, turnIds) {
  /** @type {string[]} */
  const kept = [];
  /** @type {{ from: string, to: string }[]} */
  const repaired = [];
  /** @type {string[]} */
  const dropped = [];
  /** Raw strings that named more than one id. */
  const split = raw.filter((e) => String(e).trim().split(/[;,\s]+/).length > 1).map(String);
  for (const part of raw.flatMap((e) => String(e).split(/[;,\s]+/)).filter((p) => p !== "")) {
    let id = part;
    if (!turnIds.has(id)) {
      const spelled = /^D:?0*(\d+):0*(\d+)$/.exec(part);
      const candidate = spelled === null ? undefined : `D${spelled[1]}:${spelled[2]}`;
      if (candidate !== undefined && turnIds.has(candidate)) {
        repaired.push({ from: part, to: candidate });
        id = candidate;
      } else {
        dropped.push(part);
        continue;
      }
    }
    if (!kept.includes(id)) kept.push(id);
  }
  return { kept, repaired, dropped, split };
}

/**
 * One original conversation object → the compact copy.
 * @param {string} id conv-<n> @param {any} original
 */
export function compact(id, original) {
  const sessionNumbers = Object.keys(original)
    .map((key) => /^session_(\d+)$/.exec(key))
    .filter((m) => m !== null)
    .map((m) => Number(m[1]))
    .sort((a, b) => a - b);
  const sessions = sessionNumbers.map((n) => ({
    session: n,
    date_time: original[`session_${n}_date_time`],
    turns: original[`session_${n}`].map((/** @type {any} */ t) => ({
      speaker: t.speaker,
      dia_id: t.dia_id,
      text: t.text,
      ...(typeof t.blip_caption === "string" && t.blip_caption !== "" ? { blip_caption: t.blip_caption } : {}),
    })),
  }));
  const turnIds = new Set(sessions.flatMap((s) => s.turns.map((/** @type {any} */ t) => t.dia_id)));
  const qa = [];
  const dropped = { questions: /** @type {{ question: string, evidence: string[] }[]} */ ([]), evidenceIds: /** @type {string[]} */ ([]), splitStrings: /** @type {string[]} */ ([]), repairedIds: /** @type {{ from: string, to: string }[]} */ ([]) };
  for (const q of original.qa) {
    const evidence = cleanEvidence(Array.isArray(q.evidence) ? q.evidence : [], turnIds);
    dropped.evidenceIds.push(...evidence.dropped);
    dropped.repairedIds.push(...evidence.repaired);
    dropped.splitStrings.push(...evidence.split);
    if (evidence.kept.length === 0) {
      dropped.questions.push({ question: q.question, evidence: q.evidence ?? [] });
      continue;
    }
    qa.push({ question: q.question, evidence: evidence.kept, category: q.category });
  }
  return { id, speaker_a: original.speaker_a, speaker_b: original.speaker_b, sessions, qa, dropped };
}

/** @typedef {{ speaker: string, dia_id: string, text: string, blip_caption?: string }} RawTurn */

/**
 * The copy as text: one turn and one question a line, so a diff shows what changed.
 * @param {ReturnType<typeof compact>} c
 */
export function serialize(c) {
  const j = (/** @type {unknown} */ v) => JSON.stringify(v);
  const sessions = c.sessions.map((s) => `    {"session": ${s.session}, "date_time": ${j(s.date_time)}, "turns": [\n${s.turns.map((/** @type {RawTurn} */ t) => `      ${j(t)}`).join(",\n")}\n    ]}`);
  return [
    "{",
    `  "id": ${j(c.id)},`,
    `  "speaker_a": ${j(c.speaker_a)},`,
    `  "speaker_b": ${j(c.speaker_b)},`,
    `  "sessions": [\n${sessions.join(",\n")}\n  ],`,
    `  "qa": [\n${c.qa.map((q) => `    ${j(q)}`).join(",\n")}\n  ],`,
    `  "dropped": ${j(c.dropped)}`,
    "}",
    "",
  ].join("\n");
}

function main() {
  const [from, to = HERE] = process.argv.slice(2);
  if (from === undefined || !existsSync(from)) {
    console.error("usage: npx node bench/data/locomo/prepare.mjs <dir of the original <n>.json files> [out dir]");
    process.exit(2);
  }
  const files = readdirSync(from)
    .map((name) => ({ name, match: /^(\d+)\.json$/.exec(name) }))
    .filter((f) => f.match !== null)
    .map((f) => ({ name: f.name, id: `conv-${Number(f.match?.[1])}` }))
    .sort((a, b) => Number(a.id.slice(5)) - Number(b.id.slice(5)));
  let total = { questions: 0, droppedQuestions: 0, droppedIds: 0, repairedIds: 0, splitStrings: 0 };
  for (const file of files) {
    if (HELD_OUT.has(file.id)) {
      console.log(`${file.id}: held out for acceptance, skipped (not opened)`);
      continue;
    }
    const c = compact(file.id, JSON.parse(readFileSync(join(from, file.name), "utf8")));
    const out = join(resolve(to), `${file.id}.json`);
    writeFileSync(out, serialize(c));
    const turns = c.sessions.reduce((n, s) => n + s.turns.length, 0);
    total = {
      questions: total.questions + c.qa.length,
      droppedQuestions: total.droppedQuestions + c.dropped.questions.length,
      droppedIds: total.droppedIds + c.dropped.evidenceIds.length,
      repairedIds: total.repairedIds + c.dropped.repairedIds.length,
      splitStrings: total.splitStrings + c.dropped.splitStrings.length,
    };
    console.log(
      `${file.id}: ${c.sessions.length} sessions, ${turns} turns, ${c.qa.length} questions kept, ${c.dropped.questions.length} dropped (no evidence left); ` +
        `evidence ids dropped ${JSON.stringify(c.dropped.evidenceIds)}, strings split ${JSON.stringify(c.dropped.splitStrings)}, repaired ${JSON.stringify(c.dropped.repairedIds.map((r) => `${r.from}→${r.to}`))} → ${basename(out)}`,
    );
  }
  console.log(`total: ${total.questions} questions kept, ${total.droppedQuestions} dropped; ${total.droppedIds} evidence ids dropped, ${total.repairedIds} repaired, ${total.splitStrings} strings naming several ids split`);
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main();
