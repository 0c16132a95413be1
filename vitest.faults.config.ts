import { cloudflareTest } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import { FAULT_TESTS, QUEUE_RECORDER_SCRIPT, testMigrations, workers } from "./vitest.config";

/**
 * The fault matrix (test/faults, `npm run faults`): the Worker every integration test runs, with
 * one change. Its job queue's only consumer is a recorder that runs nothing (as in the liveness
 * project), so no compaction, reply or extraction runs in the background: every binding call a
 * run counts is one its own request made, and a compaction runs only when the matrix delivers its
 * job. Its own run, not a project of `npm test`: it makes several hundred runs.
 */
const FAULTS_QUEUE = "foldline-faults-jobs";

export default defineConfig(async () => {
  const migrations = await testMigrations();
  return {
    plugins: [
      cloudflareTest(({ inject }) => {
        const base = workers(migrations, inject);
        return {
          ...base,
          miniflare: {
            ...base.miniflare,
            // The laggard agent (8 messages) is behind past 48 uncovered events (the compaction-behind operation).
            bindings: { ...base.miniflare.bindings, HOT_WINDOW_EVENTS: "48" },
            // Both queues into the recorder: replies travel on the reply queue.
            queueProducers: { JOB_QUEUE: { queueName: FAULTS_QUEUE }, REPLY_QUEUE: { queueName: FAULTS_QUEUE } },
            // What the queue took, readable by the matrix (the reply hand-off's invariant).
            serviceBindings: { ...base.miniflare.serviceBindings, QUEUE_RECORDER: "queue-recorder" },
            workers: [...base.miniflare.workers, { name: "queue-recorder", modules: true, script: QUEUE_RECORDER_SCRIPT, compatibilityDate: "2026-11-01", queueConsumers: { [FAULTS_QUEUE]: { maxBatchTimeout: 0 } } }],
          },
        };
      }),
    ],
    test: {
      name: "faults",
      include: [FAULT_TESTS],
      globalSetup: ["./test/fake-openai/global-setup.ts", "./test/fake-telegram/global-setup.ts", "./test/fake-bot/global-setup.ts"],
      setupFiles: ["./test/apply-migrations.ts"],
      // One operation's matrix is one test: a few hundred requests, each answered in milliseconds.
      // The limit only stops a hang; no assertion depends on how fast a run is.
      testTimeout: 600_000,
      hookTimeout: 120_000,
      // Every faulted run makes the product log its failure: hundreds of expected errors. The
      // matrix reports what matters; FAULTS_VERBOSE=1 shows them when debugging a run.
      ...(process.env.FAULTS_VERBOSE === "1" ? {} : { onConsoleLog: () => false }),
    },
  };
});
