import { createHash } from "node:crypto";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import type { ExtractedFact, SliceTurn } from "../../src/core/fact-extraction";
import { extractedFactSchema, extractFacts, FACT_KINDS, slugOf } from "../../src/core/fact-extraction";
import { memoryPathSchema } from "../../src/core/memory-path";

/**
 * Slugs and facts in languages other than English. A slug must never vanish for text that has a
 * letter or a digit: Cyrillic and Greek are transliterated, scripts without a simple table get a
 * stable hash word, and what was ASCII stays byte-identical to the slugs pages already carry.
 */

const hex = (text: string): string => createHash("sha256").update(text, "utf8").digest("hex");
/** The hash word of a word in a script without a transliteration table. */
const hashWord = (word: string): string => `u${hex(word.normalize("NFKC").toLowerCase()).slice(0, 10)}`;

/** The slug function as it was before non-Latin text was kept: the oracle for ASCII text. */
function asciiSlugBefore(text: string, maxWords = 6): string {
  const words = text
    .normalize("NFKD")
    .replace(/\p{M}+/gu, "")
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter((w) => w !== "")
    .slice(0, maxWords);
  let slug = "";
  for (const word of words) {
    const next = slug === "" ? word : `${slug}-${word}`;
    if (next.length > 48) break;
    slug = next;
  }
  return slug === "" ? (words[0]?.slice(0, 48) ?? "") : slug;
}

const SLUG = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
const PAGE = new RegExp(`^extracted/(?:${FACT_KINDS.join("|")})/[a-z0-9]+(?:-[a-z0-9]+)*$`);

describe("slugOf beyond ASCII", () => {
  it.each([
    ["Москва", "moskva"],
    ["Москве", "moskve"],
    ["Алиса", "alisa"],
    ["Встреча в Москве 2026", "vstrecha-v-moskve-2026"],
    ["Объявление: съезд", "obyavlenie-sezd"],
    ["Щука и ёж", "shchuka-i-ezh"],
    ["Київ", "kiiv"],
    ["Ελληνικά νέα", "ellinika-nea"],
    ["Θεσσαλονίκη", "thessaloniki"],
    ["Straße", "strasse"],
    ["Søren Łukasz", "soren-lukasz"],
    ["Jürgen", "jurgen"],
    ["Año nuevo", "ano-nuevo"],
    ["北京", hashWord("北京")],
    ["上海", hashWord("上海")],
    ["تهران", hashWord("تهران")],
    ["שלום עולם", `${hashWord("שלום")}-${hashWord("עולם")}`],
    ["北京 office", `${hashWord("北京")}-office`],
    ["iPhone15发布", `iphone15-${hashWord("发布")}`],
    ["۱۴۰۳ تهران", `1403-${hashWord("تهران")}`],
  ])("slugOf(%j) is %j", (text, slug) => {
    expect(slugOf(text)).toBe(slug);
  });

  it("keeps marks inside a hashed word: two Devanagari words that differ only by a vowel sign do not collide", () => {
    expect(slugOf("किताब")).not.toBe(slugOf("कताब"));
    expect(slugOf("किताब")).toBe(hashWord("किताब"));
  });

  it("gives different subjects different slugs, and the same text always the same slug", () => {
    expect(slugOf("北京")).not.toBe(slugOf("上海"));
    expect(slugOf("Москва")).not.toBe(slugOf("Москве"));
    expect(slugOf("تهران")).not.toBe(slugOf("شیراز"));
    expect(slugOf("北京")).toBe(slugOf("北京"));
    // The same word however it is encoded or cased: NFKC and lower case come first.
    expect(slugOf("ＡＢＣ 北京")).toBe(slugOf("abc 北京"));
    expect(slugOf("ΑΘΗΝΑ")).toBe(slugOf("αθηνα"));
  });

  it("cuts hashed words at the slug's word and length bounds", () => {
    const words = ["一", "二", "三", "四", "五", "六", "七"].map((w) => `${w}月`);
    const slug = slugOf(words.join(" "));
    expect(slug).toBe(words.slice(0, 4).map(hashWord).join("-"));
    expect(slug.length).toBeLessThanOrEqual(48);
    expect(slugOf(words.join(" "), 2)).toBe(words.slice(0, 2).map(hashWord).join("-"));
  });

  it("is byte-identical to the ASCII slugs pages already carry", () => {
    fc.assert(fc.property(fc.string({ maxLength: 120 }), fc.integer({ min: 1, max: 8 }), (text, maxWords) => slugOf(text, maxWords) === asciiSlugBefore(text, maxWords)));
    const accented = fc.string({ unit: fc.constantFrom(..."aAbZz09 -_.,!?'éÉèçÇñÑüÜöÖâîôûÁÍÓÚåÅ".split("")), maxLength: 80 });
    fc.assert(fc.property(accented, (text) => slugOf(text) === asciiSlugBefore(text)));
  });

  it("is a path-safe slug for any text, and never empty for text with a letter or a digit", () => {
    fc.assert(
      fc.property(fc.string({ unit: "grapheme", maxLength: 80 }), fc.integer({ min: 1, max: 8 }), (text, maxWords) => {
        const slug = slugOf(text, maxWords);
        expect(slug.length).toBeLessThanOrEqual(48);
        // NFKC comes first, so a symbol that stands for a letter ("㈀" is "(ᄀ)") names something too.
        if (/[\p{L}\p{N}]/u.test(text) || /[\p{L}\p{N}]/u.test(text.normalize("NFKC"))) expect(slug).toMatch(SLUG);
        else expect(slug).toBe("");
      }),
    );
  });
});

const hash = (n: number): string => hex(`event ${n}`);
function turn(seq: number, handle: string, name: string, text: string): SliceTurn {
  return { messageId: `m${seq}`, seq, eventHash: hash(seq), role: "user", author: { handle, name }, text };
}

/** Every fact is storable, on a page a memory path can name, and cites a turn of its slice. */
function expectStorable(facts: readonly ExtractedFact[], slice: readonly SliceTurn[]): void {
  for (const fact of facts) {
    expect(extractedFactSchema.safeParse(fact).success).toBe(true);
    expect(fact.page).toMatch(PAGE);
    expect(memoryPathSchema.safeParse(fact.page).success).toBe(true);
    expect(fact.sources.every((s) => slice.some((t) => t.seq === s.seq && t.messageId === s.messageId))).toBe(true);
  }
}

describe("the offline extractor in six languages", () => {
  // Each slice: a person, a decision with its date, and a number, said in the language. The rules are
  // English keywords, so a decision in another language is filed by the date it names; what must
  // never happen is a person or a fact vanishing because its words have no ASCII letter.
  const cases: { language: string; handle: string; name: string; person: string; decision: string; number: string; datePage: string; numberPage: string }[] = [
    {
      language: "English",
      handle: "ada",
      name: "Ada Lovelace",
      person: "extracted/people/ada",
      decision: "We decided the offsite is on 2026-05-14.",
      number: "The budget is €4000 for everyone.",
      datePage: "extracted/decisions/offsite",
      numberPage: "extracted/numbers/budget",
    },
    {
      language: "Spanish",
      handle: "josé",
      name: "José Núñez",
      person: "extracted/people/jose",
      decision: "Decidimos que la reunión será el 2026-05-14.",
      number: "El presupuesto es de €4000 para el viaje.",
      datePage: "extracted/dates/decidimos-que-la-reunion",
      numberPage: "extracted/numbers/el-presupuesto-es-de",
    },
    {
      language: "German",
      handle: "jürgen",
      name: "Jürgen Groß",
      person: "extracted/people/jurgen",
      decision: "Wir haben beschlossen: das Treffen ist am 2026-05-14 in der Hauptstraße.",
      number: "Das Budget beträgt €4000 für alle.",
      datePage: "extracted/dates/das-treffen-ist-am",
      numberPage: "extracted/numbers/das-budget-betragt-4000",
    },
    {
      language: "Russian",
      handle: "Алиса",
      name: "Алиса Петрова",
      person: "extracted/people/alisa",
      decision: "Мы решили перенести встречу на 2026-05-14.",
      number: "Бюджет поездки составит €4000.",
      datePage: "extracted/dates/my-reshili-perenesti-vstrechu",
      numberPage: "extracted/numbers/byudzhet-poezdki-sostavit-4000",
    },
    {
      language: "Persian",
      handle: "سارا",
      name: "سارا رضایی",
      person: `extracted/people/${hashWord("سارا")}`,
      decision: "تصمیم گرفتیم جلسه در تاریخ 2026-05-14 برگزار شود.",
      number: "بودجه سفر €4000 است.",
      datePage: `extracted/dates/${["تصمیم", "گرفتیم", "جلسه", "در"].map(hashWord).join("-")}`,
      numberPage: `extracted/numbers/${hashWord("بودجه")}-${hashWord("سفر")}-4000-${hashWord("است")}`,
    },
    {
      language: "Chinese",
      handle: "王芳",
      name: "王芳",
      person: `extracted/people/${hashWord("王芳")}`,
      decision: "我们决定把会议改到2026-05-14。",
      number: "预算是 €4000 左右。",
      datePage: `extracted/dates/${hashWord("我们决定把会议改到")}-2026-05-14`,
      numberPage: `extracted/numbers/${hashWord("预算是")}-4000-${hashWord("左右")}`,
    },
  ];

  it.each(cases)("keeps the person, the dated decision and the number said in $language", ({ handle, name, person, decision, number, datePage, numberPage }) => {
    const slice = [turn(1, handle, name, decision), turn(2, handle, name, number)];
    const facts = extractFacts(slice);
    expectStorable(facts, slice);
    expect(facts.map((f) => [f.page, f.key, f.sources[0]?.seq])).toEqual([
      [person, "name", 1],
      [datePage, datePage.split("/").at(-1), 1],
      [numberPage, numberPage.split("/").at(-1), 2],
    ]);
    expect(facts[0]?.statement).toBe(`@${handle} is ${name}, a participant of this conversation.`);
  });

  it("gives a person whose handle has no ASCII letter a page, and two such people two pages", () => {
    const slice = [turn(1, "王芳", "王芳", "你好"), turn(2, "李娜", "李娜", "你好"), turn(3, "Алиса", "", "привет")];
    const people = extractFacts(slice).filter((f) => f.key === "name");
    expect(people.map((f) => f.page)).toEqual([`extracted/people/${hashWord("王芳")}`, `extracted/people/${hashWord("李娜")}`, "extracted/people/alisa"]);
    expectStorable(people, slice);
  });
});
