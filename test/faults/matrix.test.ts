import { beforeAll, describe, expect, inject, it } from "vitest";
import { Run } from "./harness";
import type { OperationReport } from "./matrix";
import { runOperation } from "./matrix";
import { ModelScript } from "./model-script";
import type { Fixtures, Operation, RunState } from "./operations";
import { OPERATIONS, registerFixtures } from "./operations";

/**
 * The fault matrix (README.md): every public operation, every injection point, retried as a
 * client would and judged against a clean run. A test fails only when the harness cannot judge
 * (a clean run that fails or disagrees with itself, an object the plan does not reach); what the
 * product breaks is reported in the task's meta, which `npm run faults` (scripts/faults.mjs)
 * prints, and counts, and fails on only when asked to be strict.
 */

declare module "vitest" {
  interface TaskMeta {
    faultMatrix?: OperationReport;
  }
}

const model = new ModelScript(new URL(inject("fakeOpenAiBaseUrl")).origin);
let fixtures: Fixtures;

beforeAll(async () => {
  fixtures = await registerFixtures(new Run(), crypto.randomUUID().slice(0, 8));
});

describe("fault matrix", () => {
  for (const op of OPERATIONS) {
    it(op.name, async ({ task }) => {
      task.meta.faultMatrix = await runOperation(op, fixtures, model);
    });
  }
});

/**
 * What one compaction step asks of its bindings, call by call (the plan's trace of a clean run):
 * the run's packet is read from R2 once in the step (the consumer reads it and hands it to the
 * object's settlement, which checks it against its plan's hash), and the boundary the settlement
 * wrote is not read back. In this file, after the matrix: the fake model is one for the project,
 * and a test in another file would meet the faults the matrix scripts at it.
 */
describe("one compaction step", () => {
  const compaction = OPERATIONS.find((op) => op.name === "compaction") as Operation<RunState & { readonly job: { readonly packetKey: string } }> | undefined;

  it("reads its packet once, and no boundary it wrote itself", async () => {
    if (compaction === undefined) throw new Error("the fault matrix has no compaction operation");
    await model.reset();
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
