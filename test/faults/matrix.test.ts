import { beforeAll, describe, inject, it } from "vitest";
import { Run } from "./harness";
import type { OperationReport } from "./matrix";
import { runOperation } from "./matrix";
import { ModelScript } from "./model-script";
import type { Fixtures } from "./operations";
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
