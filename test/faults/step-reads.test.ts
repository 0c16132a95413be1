import { beforeAll, describe, expect, it } from "vitest";
import { Run } from "./harness";
import type { Fixtures, Operation, RunState } from "./operations";
import { OPERATIONS, registerFixtures } from "./operations";

/**
 * What one compaction step asks of its bindings, call by call (the fault plan's trace of a clean
 * run): the run's packet is read from R2 once in the step (the consumer reads it and hands it to
 * the object's settlement, which checks it against its plan's hash), and the boundary by its run
 * id once in the settlement.
 */

let fixtures: Fixtures;

beforeAll(async () => {
  fixtures = await registerFixtures(new Run(), crypto.randomUUID().slice(0, 8));
});

const compaction = OPERATIONS.find((op) => op.name === "compaction") as Operation<RunState & { readonly job: { readonly packetKey: string } }> | undefined;

describe("one compaction step", () => {
  it("reads its packet once, and no boundary it wrote itself", async () => {
    if (compaction === undefined) throw new Error("the fault matrix has no compaction operation");
    const run = new Run();
    const state = await compaction.setup(run, 1, fixtures);
    run.plan.arm();
    const delivered = await compaction.attempt(run, state, 1);
    run.plan.disarm();
    expect(delivered.status).toBe(200);
    const packetReads = run.plan.trace.filter((call) => call.binding === "DOCUMENTS" && call.method === "get" && call.detail === state.job.packetKey);
    expect(packetReads.map((call) => call.side)).toEqual(["worker"]);
    // A trace names a statement by its first 80 characters: the boundary's columns, as every read of a boundary row starts.
    const boundaryReads = run.plan.trace.filter((call) => call.side === "object" && call.detail.startsWith("SELECT id, epoch_id, position, previous_id, covered_through_seq"));
    // `runState`'s, before the model call, and the settlement's check that the run has not settled
    // before; the boundary just written is not read back.
    expect(boundaryReads.map((call) => call.method)).toEqual(["first", "first"]);
  });
});
