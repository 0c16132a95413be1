import { describe, expect, it } from "vitest";
import type { EventInput } from "../../src/core/events";
import { EXCERPT_CHARS, eventExcerpt, excerpt } from "../../src/http/inspector/event-excerpt";
import { BOB, deletion, delivered, edit, failed, proposal, source, stored } from "./event-builders";

describe("eventExcerpt", () => {
  const compactorRun: EventInput = {
    kind: "run",
    idempotencyKey: "run:cmp_1:failed:1",
    sensitive: false,
    body: { runId: "cmp_1", agentId: "concierge.compactor", role: "compactor", status: "failed", model: "gpt-4o-mini", error: { code: "model_timeout", message: "no answer in 60 s" } },
  };
  it.each<[string, EventInput, string, string | null]>([
    ["a source: author, message, text", source("7", "Book a table\nfor two?"), "Ada · message 7", "Book a table for two?"],
    ["a reply to a message, with its author's handle", source("8", "ok", { author: BOB, replyTo: "7" }), "Bob · message 8 · replying to 7", "ok"],
    ["an edit: what it edits and the new text", edit("7", "for three"), "edits message 7", "for three"],
    ["a deletion: what it deletes, no text", deletion("7"), "deletes message 7", null],
    ["a proposal: agent and what it answers", proposal("p1", "concierge", "Done.", { replyTo: "7", runId: "r1" }), "concierge · proposal p1 · replying to 7 · run r1", "Done."],
    ["a delivery: its status", delivered("p1"), "delivered proposal p1", null],
    ["a failed delivery: its reason", failed("p1", "bot was blocked by the user"), "delivery of proposal p1 failed", "bot was blocked by the user"],
    ["a run: role, agent, status, model and error code", compactorRun, "compactor concierge.compactor · run cmp_1 · failed · gpt-4o-mini · error model_timeout", null],
  ])("%s", (_name, input, label, text) => {
    expect(eventExcerpt(stored(1, input))).toEqual({ label, text });
  });

  it("keeps the text as data: markup in a message is returned verbatim for the view to escape", () => {
    expect(eventExcerpt(stored(1, source("9", "<script>alert(1)</script>"))).text).toBe("<script>alert(1)</script>");
  });
});

describe("excerpt", () => {
  it("returns short text on one line, whitespace collapsed", () => {
    expect(excerpt("  a\n\n b\tc  ")).toBe("a b c");
  });

  it("cuts long text to the limit, ellipsis included", () => {
    const cut = excerpt("x".repeat(1_000));
    expect(cut).toHaveLength(EXCERPT_CHARS);
    expect(cut.endsWith("…")).toBe(true);
  });

  it("never splits a surrogate pair", () => {
    const text = `${"x".repeat(8)}😀${"y".repeat(10)}`;
    const cut = excerpt(text, 10);
    expect(cut).toBe(`${"x".repeat(8)}…`);
    expect(cut.isWellFormed()).toBe(true);
  });
});
