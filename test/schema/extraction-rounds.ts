import type { DatabaseSync } from "node:sqlite";
import { expect } from "vitest";
import type { ExtractedFact } from "../../src/core/fact-extraction";
import { mergeFacts } from "../../src/core/fact-merge";
import type { MergedPage } from "../../src/storage/shard/extractions";
import { readPageHeads, writeMergedVersions } from "../../src/storage/shard/extractions";
import { d1Over } from "./sqlite-d1";

/**
 * Extracted pages as extraction writes them, for the schema tests of extracted memory: facts merged
 * by extraction's own rule (core/fact-merge) from statements in six scripts, each citing a message
 * the conversation's log holds, written through extraction's writer.
 */

export const CONVERSATION = "telegram:7123456789:-1001987654321";
export const AGENT = "support-bot.compactor";
export const AT = "2026-12-05T10:00:00.123Z";

/** Statements as people say them, in six scripts. */
const SAID = [
  (n: number) => `@ana (Ana): the offsite budget is ${1_000 + n} euros, flights included, hotel not`,
  (n: number) => `@li (李华): 我们把会议改到星期${"一二三四五"[n % 5]}下午三点，地点在二楼会议室${n}`,
  (n: number) => `@yuki (Yuki): 来週の金曜日に${n}人で打ち合わせをします。資料は前日までに共有してください`,
  (n: number) => `@omar (Omar): سأحجز ${n} غرف في الفندق القريب من المحطة للفريق كله`,
  (n: number) => `@olga (Ольга): встреча переносится на ${n} число, я пришлю новое приглашение`,
  (n: number) => `@ravi (Ravi): मैं ${n} तारीख तक रिपोर्ट का मसौदा भेज दूँगा`,
];

export interface Cited {
  readonly seq: number;
  readonly hash: string;
}

/** Round `round` of extraction's facts for page `p`: three keys, their statements in the page's script, each citing a logged message. */
const factsOf = (p: number, round: number, cited: readonly Cited[]): ExtractedFact[] =>
  [0, 1, 2].map((k) => {
    const source = cited[(p * 7 + round * 3 + k) % cited.length] ?? { seq: 1, hash: "" };
    return { page: `extracted/plans/topic-${p}`, key: `point-${k}`, statement: (SAID[p % SAID.length] ?? String)(100 * round + k), sources: [{ messageId: String(7_000 + source.seq - 1), seq: source.seq, eventHash: source.hash }] };
  });

/** One round of extraction over `pages` pages (`extracted/plans/topic-<p>`): each merged over its head and written; the texts written. */
export async function extractRound(db: DatabaseSync, pages: number, round: number, cited: readonly Cited[]): Promise<string[]> {
  const d1 = d1Over(db);
  const paths = [...Array(pages).keys()].map((p) => `extracted/plans/topic-${p}`);
  const heads = await readPageHeads(d1, CONVERSATION, AGENT, paths);
  const merged: MergedPage[] = paths.map((path, p) => {
    const head = heads.get(path);
    const result = mergeFacts(path, head?.content, factsOf(p, round, cited));
    return { path, head, content: result.content, provenance: [...result.current].map(([factKey, fact]) => ({ factKey, messageId: fact.sources[0]?.messageId ?? "", seq: fact.sources[0]?.seq ?? 0, eventHash: fact.sources[0]?.eventHash ?? "", runId: `ext_${round}` })) };
  });
  expect((await writeMergedVersions(d1, CONVERSATION, AGENT, merged, new Date(AT))).size).toBe(pages);
  return merged.map((page) => page.content);
}
