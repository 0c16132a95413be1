import { compactionPolicySchema } from "../../src/core/declarations";
import type { CompactionPolicy } from "../../src/core/declarations";
import type { Author } from "../../src/core/events";
import { hashCanonical, sha256Hex } from "../../src/core/hash";
import type { FrozenTurn, Packet } from "../../src/core/packet";
import { PACKET_FORMAT, packetSchema } from "../../src/core/packet";
import { compactorPrompt } from "../../src/core/prompts";
import { renderEnvelope, renderSliceLine, renderTurn } from "../../src/core/render";
import { turnHash } from "../../src/core/reconstruction";

/**
 * A valid compaction packet for tests, built the way the planner builds one: turns rendered with
 * the real renderers, hashes computed, sizes derived from the rendered text. Pass only what a test
 * cares about; everything derived is recomputed from the overrides unless overridden itself. The
 * result is parsed with `packetSchema`, so a fixture is always a packet the system could have written.
 */

export const ADA: Author = { id: "u:ada", name: "Ada", username: "ada" };
export const BOB: Author = { id: "u:bob", name: "Bob", username: "bob" };
export const AGENT: Author = { id: "agent:helper", name: "Helper", username: "helper" };

export interface TurnSpec {
  readonly text: string;
  readonly role?: "user" | "assistant";
  readonly author?: Author;
  readonly id?: string;
  readonly group?: number;
}

export interface PacketOverrides extends Partial<Omit<Packet, "frozen" | "sizes" | "policy">> {
  /** The frozen slice, oldest first: a string is a user turn by Ada. Defaults to a short planning exchange. */
  readonly turns?: readonly (string | TurnSpec)[];
  readonly policy?: Partial<CompactionPolicy>;
  readonly sizes?: Partial<Packet["sizes"]>;
}

const hex = (label: string): string => sha256Hex(label);

/** A small but realistic slice: a decision with attribution, chatter, an answered and an open question. */
const DEFAULT_TURNS: readonly TurnSpec[] = [
  { text: "Morning all!", author: ADA },
  { text: "We need to pick the invoice vendor before Friday. Vendor B passed the compliance review last week.", author: ADA },
  { text: "Vendor A is cheaper, but their compliance review is still pending and legal will not sign without it.", author: BOB },
  { text: "Vendor A could still work if their review finishes before the end of the month.", author: BOB },
  { text: "We cannot wait that long: the old invoicing contract expires on the 30th.", author: ADA },
  { text: "Then we go with vendor B for invoices. Bob, please draft the contract and send it to legal.", author: ADA },
  { text: "Noted: vendor B chosen for invoicing by Ada; Bob preferred vendor A on price. Contract draft assigned to Bob.", role: "assistant", author: AGENT },
  { text: "ok 👍", author: BOB },
  { text: "What was the monthly price difference between the two vendors again?", author: ADA },
  { text: "Vendor A quoted 1,200 EUR a month and vendor B 1,450 EUR a month, so B costs 250 EUR more.", role: "assistant", author: AGENT },
  { text: "Fine, the compliance review matters more than 250 EUR.", author: ADA },
  { text: "Should the contract cover the Berlin office too, or only the Paris team for now?", author: BOB },
];

/** Turns as the planner freezes them: a user turn opens a group, an assistant reply joins the open one. */
function frozenTurns(specs: readonly (string | TurnSpec)[]): FrozenTurn[] {
  let seq = 0;
  let group = 0;
  return specs.map((spec) => {
    const turn = typeof spec === "string" ? { text: spec } : spec;
    const role = turn.role ?? "user";
    const author = turn.author ?? (role === "user" ? ADA : AGENT);
    seq += 1;
    if (role === "user" || group === 0) group = seq;
    const id = turn.id ?? `${role === "user" ? "s" : "p"}${seq}`;
    const base = { id, messageId: String(seq), role, author, text: turn.text };
    return {
      ...base,
      group: turn.group ?? group,
      hash: turnHash(role, author, turn.text),
      rendered: renderSliceLine(base),
      nativeChars: renderTurn(base).content.length,
    };
  });
}

export function packetFixture(overrides: PacketOverrides = {}): Packet {
  const { turns: turnSpecs, policy: policyOverrides, sizes: sizeOverrides, ...rest } = overrides;
  const turns = frozenTurns(turnSpecs ?? DEFAULT_TURNS);
  const policy = compactionPolicySchema.parse({ ...policyOverrides });
  const outputMode = rest.outputMode ?? "projection";
  const prompt = rest.prompt ?? compactorPrompt(outputMode);
  const previousBoundary = rest.previousBoundary ?? null;
  const chars = turns.reduce((total, t) => total + t.nativeChars, 0);
  const previousChars = previousBoundary === null ? 0 : renderEnvelope("boundary", previousBoundary.body).content.length;
  const lastSeq = Math.max(1, turns.length, ...turns.map((t) => t.group));
  const first = turns[0];
  const last = turns.at(-1);

  const packet: Packet = {
    format: PACKET_FORMAT,
    conversationId: "api:fixture",
    conversationType: "group",
    agentId: "helper",
    compactorId: "helper-compactor",
    historyAgents: ["helper"],
    admitSensitive: false,
    epoch: { id: `foldline-compactor/1:${hex("fingerprint")}`, compactorVersion: "foldline-compactor/1", fingerprint: hex("fingerprint") },
    runId: "run-fixture-1",
    triggerSeq: lastSeq + 10,
    frontier: { id: "frontier-fixture", hash: hex("frontier"), startSeq: 0 },
    outputMode,
    promptHash: sha256Hex(prompt),
    previousBoundary,
    amendments: [],
    memoryPages: [],
    documents: [],
    createdAt: "2026-11-20T12:00:00.000Z",
    ...rest,
    prompt,
    policy,
    frozen: {
      turns,
      fromSeq: first?.group ?? 1,
      throughSeq: lastSeq,
      throughTurnId: last?.id ?? "s1",
      sourceCount: new Set(turns.map((t) => t.group)).size,
      eventCount: turns.length,
      chars,
      turnIdsHash: hashCanonical(turns.map((t) => t.id)),
      renderedHash: hashCanonical(turns.map((t) => t.rendered)),
    },
    sizes: {
      preCompactionChars: previousChars + chars + 1_000,
      retainedTailChars: 1_000,
      replacedChars: previousChars + chars,
      ...sizeOverrides,
    },
  };
  return packetSchema.parse(packet);
}

/** A memory page as recall would return it. */
export function memoryPage(path: string, content: string, version = 1): Packet["memoryPages"][number] {
  return { path, version, contentHash: sha256Hex(content), content };
}

/** A previous boundary whose body is `body`. */
export function previousBoundary(body: string, coveredThroughSeq = 1): NonNullable<Packet["previousBoundary"]> {
  return { id: "boundary-previous", hash: sha256Hex(body), coveredThroughSeq, body };
}
