import { describe, expect, it } from "vitest";
import { extractionRunId, failedExtractionEvent, provenanceRows, sliceTurns, turnSeq } from "../../src/core/extraction-plan";
import { eventInputSchema } from "../../src/core/events";
import type { ExtractedFact } from "../../src/core/fact-extraction";
import { mergeFacts } from "../../src/core/fact-merge";
import type { FrozenTurn } from "../../src/core/packet";

const h = (c: string) => c.repeat(64);
const frozen = (id: string, messageId: string | undefined, text: string): FrozenTurn => ({
  id,
  ...(messageId === undefined ? {} : { messageId }),
  group: 1,
  role: id.startsWith("s") ? "user" : "assistant",
  author: { id: "tg:42", name: "Ada", username: "ada" },
  text,
  hash: h("0"),
  rendered: text,
  nativeChars: text.length,
});

describe("extraction-plan", () => {
  it("derives the extraction's run id from its compaction's", () => {
    expect(extractionRunId("cmp_0f8e2a50-9c3e-4f36-8a38-3b6f0e1f3a11")).toBe("ext_0f8e2a50-9c3e-4f36-8a38-3b6f0e1f3a11");
  });

  it("reads a frozen turn's event sequence from its id", () => {
    expect([turnSeq("s12"), turnSeq("p7"), turnSeq("s0"), turnSeq("x3"), turnSeq("s1a")]).toEqual([12, 7, undefined, undefined, undefined]);
  });

  it("binds each frozen turn to its event's hash, by the platform message id where the packet has one", () => {
    const hashes = new Map([[3, h("a")], [4, h("b")]]);
    expect(sliceTurns([frozen("s3", "501", "hello"), frozen("p4", undefined, "hi")], hashes)).toEqual({
      ok: true,
      value: [
        { messageId: "501", seq: 3, eventHash: h("a"), role: "user", author: { handle: "ada", name: "Ada" }, text: "hello" },
        { messageId: "p4", seq: 4, eventHash: h("b"), role: "assistant", author: { handle: "ada", name: "Ada" }, text: "hi" },
      ],
    });
  });

  it("fails the slice when a turn's event is missing or its id is not a log position", () => {
    expect(sliceTurns([frozen("s3", "501", "hello")], new Map())).toEqual({ ok: false, error: { reason: "missing_event", seq: 3 } });
    expect(sliceTurns([frozen("q3", "501", "hello")], new Map([[3, h("a")]]))).toEqual({ ok: false, error: { reason: "unknown_turn", turnId: "q3" } });
  });

  it("records a failed attempt as a valid, content-dark compactor run event keyed by attempt", () => {
    const event = failedExtractionEvent("helper.compactor", "ext_1", "bnd_1", 2, "output_not_json", "x".repeat(5_000));
    expect(eventInputSchema.safeParse(event).success).toBe(true);
    expect(event).toMatchObject({ idempotencyKey: "run:ext_1:failed:2", body: { role: "compactor", status: "failed", detail: { attempt: 2, process: "extraction", boundaryId: "bnd_1" } } });
  });

  describe("provenanceRows", () => {
    const PAGE = "extracted/numbers/budget";
    const CONVERSATION = "api:offsite-planning";
    const source = (seq: number) => ({ messageId: `m${seq}`, seq, eventHash: h((seq % 10).toString()) });
    const fact = (key: string, statement: string, ...seqs: number[]): ExtractedFact => ({ page: PAGE, key, statement, sources: seqs.map(source) });
    const row = (factKey: string, seq: number) => ({ factKey, conversationId: CONVERSATION, messageId: `m${seq}`, seq, eventHash: h((seq % 10).toString()), runId: "ext_1" });
    const rowsOf = (content: string | undefined, facts: readonly ExtractedFact[]) => provenanceRows(mergeFacts(PAGE, content, facts).current, CONVERSATION, "ext_1");

    it("names per key only the sources of the fact that is current after the merge", () => {
      // One slice says the budget twice: only the later message states the value the page now holds.
      expect(rowsOf(undefined, [fact("budget", "budget is 4k", 1), fact("budget", "budget is 5k", 2), fact("currency", "in euros", 4, 3)])).toEqual([row("budget", 2), row("currency", 4), row("currency", 3)]);
    });

    it("adds no row for a fact that only went into the superseded values", () => {
      const page = mergeFacts(PAGE, undefined, [fact("budget", "budget is 5k", 8)]).content;
      expect(rowsOf(page, [fact("budget", "budget is 4k", 5)])).toEqual([]);
      expect(rowsOf(page, [fact("budget", "budget is 4k", 5), fact("budget", "budget is 6k", 9)])).toEqual([row("budget", 9)]);
    });
  });
});
