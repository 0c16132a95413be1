import fc from "fast-check";
import type { EventInput } from "../../src/core/events";
import type { ReconstructionPolicy } from "../../src/core/reconstruction";
import { ADA, BOB, deletion, delivered, edit, failed, proposal, run, source, storeAll } from "./event-builders";

/**
 * Generators of arbitrary logs for the property tests of the fold and of what must agree with it:
 * few message and proposal ids, so that edits, deletions, replies, duplicate ids and out-of-order
 * evidence collide often.
 */

export const MESSAGES = ["m1", "m2", "m3", "m4"] as const;
export const PROPOSALS = ["p1", "p2", "p3", "p4"] as const;
export const AGENTS = ["agent-a", "agent-b", "agent-c"] as const;
/**
 * Edit times in mixed offsets and precisions, where string order is not time order; the last two
 * name the same instant, so the tie falls to the later seq.
 */
export const EDIT_TIMES = [
  "2024-01-01T00:00:01.000Z",
  "2024-01-01T02:00:02+02:00",
  "2024-01-01T00:00:02.5Z",
  "2024-01-01T00:00:03Z",
  "2023-12-31T19:00:03.000-05:00",
] as const;
/** Later than every generated edit time. */
export const LAST_WORD = "2099-12-31T23:59:59.000Z";

export const text = fc.string({ maxLength: 12 });
export const optional = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | undefined> => fc.option(arb, { nil: undefined });

/**
 * Events over the given message and proposal ids. Few ids make collisions common; more ids make
 * longer conversations with many groups, where a reader of part of the log must find the events
 * that lie outside it.
 */
export function inputArbOver(messages: readonly string[], proposals: readonly string[]): fc.Arbitrary<EventInput> {
  const sourceArb = fc
    .record({
      messageId: fc.constantFrom(...messages),
      text,
      sensitive: fc.boolean(),
      author: fc.constantFrom(ADA, BOB),
      replyTo: optional(fc.constantFrom(...messages)),
    })
    .map(({ messageId, text, sensitive, author, replyTo }) =>
      source(messageId, text, { sensitive, author, ...(replyTo === undefined ? {} : { replyTo }) }),
    );

  const editArb = fc
    .record({
      target: fc.constantFrom(...messages, "m-never-sent"),
      text,
      sensitive: fc.boolean(),
      editedAt: optional(fc.constantFrom(...EDIT_TIMES)),
    })
    .map(({ target, text, sensitive, editedAt }) =>
      edit(target, text, { sensitive, ...(editedAt === undefined ? {} : { editedAt }) }),
    );

  const deletionArb = fc.constantFrom(...messages).map((target) => deletion(target));

  const proposalArb = fc
    .record({
      proposalId: fc.constantFrom(...proposals),
      agentId: fc.constantFrom(...AGENTS),
      text,
      sensitive: fc.boolean(),
      replyTo: optional(fc.constantFrom(...messages, "m-unknown")),
    })
    .map(({ proposalId, agentId, text, sensitive, replyTo }) =>
      proposal(proposalId, agentId, text, { sensitive, ...(replyTo === undefined ? {} : { replyTo }) }),
    );

  const deliveryArb = fc
    .tuple(fc.constantFrom(...proposals), fc.boolean())
    .map(([proposalId, ok]) => (ok ? delivered(proposalId) : failed(proposalId)));

  return fc.oneof(
    { arbitrary: sourceArb, weight: 4 },
    { arbitrary: editArb, weight: 2 },
    { arbitrary: deletionArb, weight: 1 },
    { arbitrary: proposalArb, weight: 3 },
    { arbitrary: deliveryArb, weight: 3 },
    { arbitrary: fc.constantFrom(...AGENTS).map((agentId) => run("r1", agentId)), weight: 1 },
  );
}

export const inputArb: fc.Arbitrary<EventInput> = inputArbOver(MESSAGES, PROPOSALS);

/** A log as appended: seqs 1..n in array order. */
export const logArb = fc.array(inputArb, { maxLength: 30 }).map((inputs) => storeAll(inputs));

export const policyArb: fc.Arbitrary<ReconstructionPolicy> = fc.record({
  admittedAgents: fc.oneof(
    fc.constant("all" as const),
    fc.subarray([...AGENTS]).map((agents): ReadonlySet<string> => new Set(agents)),
  ),
  includeSensitive: fc.boolean(),
});
