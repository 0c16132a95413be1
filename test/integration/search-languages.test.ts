import { describe, expect, it } from "vitest";
import { NO_SPACE_RANGES, SEARCH_FOLDS } from "../../src/core/search-text";
import { settledChain } from "../support/chain";
import { register } from "../support/declarations";
import { BOT_ID, call, json, textUpdate, tokenFor, webhook } from "./helpers";

/**
 * Recall in the languages people chat in: a fact said in a Telegram group, compacted away, is found
 * by `memory/search` and served in the memory envelope for a question asked in the same language —
 * in words that differ from the fact's as people's do: English inflection (the question shares no
 * word with the fact but their stems), Persian typed with or without the zero-width non-joiner and
 * with Arabic letters (no word in common until folded), Chinese without spaces.
 */

interface Served {
  messages: { role: string; content: string }[];
  manifest: { boundary: { coveredThroughSeq: number } | null; memory?: { turns: { messageId: string }[] } };
}

interface SearchResult {
  type: "page" | "turn";
  content: string;
  sources: { messageId: string; seq: number }[];
}

const CASES = [
  { language: "English", name: "Ada", fact: "We decided the budget for the Lisbon offsite is 4,500 euros.", question: "How much are we budgeting for offsites?" },
  { language: "Russian", name: "Алиса", fact: "Мы решили: бюджет поездки в Казань составляет 4500 рублей.", question: "Какой бюджет у поездки в Казань?" },
  { language: "Spanish", name: "Lucía", fact: "Hemos decidido que la cena del equipo será en el restaurante Casa Lucio.", question: "¿Dónde será la cena del equipo?" },
  { language: "German", name: "Jürgen", fact: "Wir haben beschlossen, dass das Sommerfest am Bodensee stattfindet.", question: "Wo findet das Sommerfest statt?" },
  // The fact with zero-width non-joiners and Persian letters; the question typed without them and with Arabic yeh and kaf.
  { language: "Persian", name: "مریم", fact: "ما تصمیم گرفتیم که جلسه‌ی بعدی در شیراز برگزار می‌شود.", question: "جلسهي بعدي كجاست؟" },
  { language: "Chinese", name: "王芳", fact: "我们决定团建的预算是五千元，地点在杭州。", question: "团建的预算是多少？" },
] as const;

/** Filler in the group: enough to compact the fact away, sharing no word with any question. */
const filler = (i: number): string => `Filler ${i}: the coffee machine on floor ${i % 7} works again, and the printer queue is empty.`;

const conversationOf = (chatId: number): string => `telegram:${BOT_ID}:${chatId}`;

/** The first two letters met walking from `from` towards `to` (assigned letters: the tokenizer drops the rest). */
function lettersFrom(from: number, to: number, step: 1 | -1): number[] {
  const found: number[] = [];
  for (let c = from; found.length < 2 && (step === 1 ? c <= to : c >= to); c += step) if (/\p{L}/u.test(String.fromCodePoint(c))) found.push(c);
  return found;
}

async function groupMessage(chatId: number, updateId: number, name: string, text: string): Promise<number> {
  const update = textUpdate(updateId, chatId, text, { chat: { id: chatId, type: "group", title: "team" }, from: { id: 4_242, is_bot: false, first_name: name } });
  const res = await webhook(update);
  expect(res.status, await res.clone().text()).toBe(200);
  return update.message.message_id;
}

describe("recall in six languages", () => {
  it.each(CASES.map((c, i) => ({ ...c, chatId: -1_009_000_000_000 - i * 1_000 - Math.floor(Math.random() * 999) })))(
    "$language: a compacted fact is found by search and served for its question",
    async ({ name, fact, question, chatId }) => {
      const conversation = conversationOf(chatId);
      const agentId = `lang-${crypto.randomUUID().slice(0, 8)}`;
      const token = await tokenFor(conversation, `agent:${agentId}`);
      expect((await register(token, { agentId, sources: [conversation], trigger: 2_000, retain: 800, admitSensitive: true })).status).toBe(201);
      const updateBase = Math.floor(Math.random() * 1_000_000_000);
      const factId = await groupMessage(chatId, updateBase, name, fact);
      for (let i = 1; i <= 30; i++) await groupMessage(chatId, updateBase + i, "Bob", filler(i));
      const { chain } = await settledChain(conversation, agentId, 1);
      expect(chain[0]?.body.coveredThrough.seq ?? 0).toBeGreaterThanOrEqual(1);

      const searchPath = `/v1/conversations/${encodeURIComponent(conversation)}/memory/search?agent=${agentId}&q=${encodeURIComponent(question)}`;
      const searched = await call("GET", searchPath, { token });
      expect(searched.status, await searched.clone().text()).toBe(200);
      const results = (await json<{ results: SearchResult[] }>(searched)).results;
      expect(results[0]?.sources.map((s) => s.messageId)).toEqual([String(factId)]);

      const served = await json<Served>(await call("GET", `/v1/conversations/${encodeURIComponent(conversation)}/context?agent=${agentId}&query=${encodeURIComponent(question)}`, { token }));
      // The fact is no longer in the exact tail: it is served from memory.
      expect(served.manifest.boundary?.coveredThroughSeq ?? 0).toBeGreaterThanOrEqual(1);
      const memory = served.messages.find((m) => m.content.startsWith('<untrusted-history-summary kind="memory">'));
      expect(memory?.content).toContain(fact);
      expect(served.manifest.memory?.turns[0]?.messageId).toBe(String(factId));
    },
  );
});

describe("every rule of search-text, through the service", () => {
  it("folds every character search-text folds, and finds a pair of characters at each end of every range", async () => {
    const chatId = -1_007_000_000_000 - Math.floor(Math.random() * 1_000_000);
    const conversation = conversationOf(chatId);
    const agentId = `fold-${crypto.randomUUID().slice(0, 8)}`;
    const token = await tokenFor(conversation, `agent:${agentId}`);
    expect((await register(token, { agentId, sources: [conversation], trigger: 200_000, admitSensitive: true })).status).toBe(201);
    const probes: { text: string; query: string }[] = [
      // A word holding the folded character, found by the word as folded (and the folded word by the character).
      // (Each probe has a word of its own, so no two say the same thing and search keeps both.)
      ...SEARCH_FOLDS.flatMap(([from, to], i) => [
        { text: `زبر${from}دست probe${i}a`, query: `زبر${to}دست` },
        { text: `سخت${to}کوش probe${i}b`, query: `سخت${from}کوش` },
      ]),
      // The first and the last two letters of each range, inside a run of that script.
      ...NO_SPACE_RANGES.flatMap(([lo, hi]) => {
        const [a = lo, b = lo] = lettersFrom(lo, hi, 1);
        const [y = hi, z = hi] = lettersFrom(hi, lo, -1);
        return [
          { text: `range ${lo} ${String.fromCodePoint(a, b, a)} start`, query: String.fromCodePoint(a, b) },
          { text: `range ${hi} ${String.fromCodePoint(z, y, z)} end`, query: String.fromCodePoint(y, z) },
        ];
      }),
    ];
    const updateBase = Math.floor(Math.random() * 1_000_000_000);
    const ids: number[] = [];
    for (const [i, probe] of probes.entries()) ids.push(await groupMessage(chatId, updateBase + i, "Ada", probe.text));
    for (const [i, probe] of probes.entries()) {
      const path = `/v1/conversations/${encodeURIComponent(conversation)}/memory/search?agent=${agentId}&q=${encodeURIComponent(probe.query)}&limit=50`;
      const results = (await json<{ results: SearchResult[] }>(await call("GET", path, { token }))).results;
      expect(
        results.some((r) => r.sources.some((s) => s.messageId === String(ids[i]))),
        `${JSON.stringify(probe)} (${[...probe.query].map((c) => c.codePointAt(0)?.toString(16)).join(" ")})`,
      ).toBe(true);
    }
  });
});
