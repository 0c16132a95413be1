import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import "./scripts/offline-env.mjs";

/** Secrets the tests configure; each test file reads them from `env`. */
export const TEST_BOT_ID = "7001";

/**
 * The `service` reply mode's bot: an auxiliary Worker whose WorkerEntrypoint answers over RPC with
 * the last user message of the composed request, so a test can tell its reply from any model's.
 */
const ECHO_BOT_SCRIPT = `
import { WorkerEntrypoint } from "cloudflare:workers";
export class EchoBot extends WorkerEntrypoint {
  reply(payload) {
    const last = [...payload.request.messages].reverse().find((m) => m.role === "user");
    return { text: "echo-bot (" + payload.agentId + "): " + (typeof last?.content === "string" ? last.content : "") };
  }
}
export default { fetch() { return new Response("echo-bot"); } };
`;

type Inject = <K extends "fakeOpenAiBaseUrl" | "fakeTelegramOrigin" | "fakeBotSecret" | "fakeAlertsOrigin" | "fakeAlertsSecret">(key: K) => string;

/** The Worker as every integration test runs it: real local bindings, loopback fakes at the edge. */
type Migrations = { readonly control: Awaited<ReturnType<typeof readD1Migrations>>; readonly shard: Awaited<ReturnType<typeof readD1Migrations>> };

/**
 * The D1 databases of every test Worker: the control database and three shards (wrangler.toml binds
 * two), so placement spreads conversations over more shards than the local default.
 */
const TEST_DATABASES = {
  DB: "foldline-control",
  DB_SHARD_0: "foldline-shard-0",
  DB_SHARD_1: "foldline-shard-1",
  DB_SHARD_2: "foldline-shard-2",
  // Left unmigrated by the setup file: the backfill tests apply the migrations before the word
  // indexes, store data the old way, then migrate and backfill (test/integration/search-backfill.test.ts).
  BACKFILL_CONTROL: "foldline-backfill-control",
  BACKFILL_SHARD: "foldline-backfill-shard",
};

export function workers(migrations: Migrations, inject: Inject) {
  return {
    wrangler: { configPath: "./wrangler.toml" },
    // The product (src/index.ts) behind the benchmark's instruments (bench/worker): the D1 meter a
    // test asks for by header, the usage ledger and the D1 simulation, each off unless its var is on.
    main: "./bench/worker/index.ts",
    miniflare: {
      d1Databases: TEST_DATABASES,
      bindings: {
        TEST_MIGRATIONS_CONTROL: migrations.control,
        TEST_MIGRATIONS_SHARD: migrations.shard,
        [`TELEGRAM_WEBHOOK_SECRET_${TEST_BOT_ID}`]: "test-webhook-secret-7001",
        // The loopback fake model endpoint (test/fake-openai). No OPENAI_API_KEY is bound, so
        // tests use the offline compactor unless they pass a key explicitly.
        OPENAI_BASE_URL: inject("fakeOpenAiBaseUrl"),
        // The provider profile "fake": declarations that name it reach the fake endpoint with a key,
        // exercising the real OpenAI SDK path end to end.
        OPENAI_API_KEY_FAKE: "test-key",
        OPENAI_BASE_URL_FAKE: inject("fakeOpenAiBaseUrl"),
        // Retries and backoff without waiting: the tests observe their order, not their timing.
        QUEUE_RETRY_BASE_SECONDS: "0",
        COMPACTION_BACKOFF_BASE_SECONDS: "0",
        // The loopback fake Bot API (test/fake-telegram) and the test bot's token for it.
        TELEGRAM_API_BASE_URL: inject("fakeTelegramOrigin"),
        [`TELEGRAM_BOT_TOKEN_${TEST_BOT_ID}`]: `${TEST_BOT_ID}:test-token`,
        // The direct-reply allowlist of the dispatcher tests; their compactors are never on it.
        DIRECT_REPLY_AGENTS: "tg-concierge,tg-failing",
        // The provider profile "faketg": its own session on the fake model endpoint, so the
        // dispatcher tests can script compactor failures without touching other files' scripts.
        OPENAI_API_KEY_FAKETG: "test-key",
        OPENAI_BASE_URL_FAKETG: `${new URL(inject("fakeOpenAiBaseUrl")).origin}/s/telegram-dispatch/v1`,
        // The provider profile "fakeiso": the queue-isolation tests' own session on the fake model.
        OPENAI_API_KEY_FAKEISO: "test-key",
        OPENAI_BASE_URL_FAKEISO: `${new URL(inject("fakeOpenAiBaseUrl")).origin}/s/queue-isolation/v1`,
        // The provider profile "fakecm": the compaction-model tests' own session, which they script and reset.
        OPENAI_API_KEY_FAKECM: "test-key",
        OPENAI_BASE_URL_FAKECM: `${new URL(inject("fakeOpenAiBaseUrl")).origin}/s/compaction-model/v1`,
        // The provider profile "fakereq": its own session, where the compactor-request tests read
        // exactly the requests their compactors sent.
        OPENAI_API_KEY_FAKEREQ: "test-key",
        OPENAI_BASE_URL_FAKEREQ: `${new URL(inject("fakeOpenAiBaseUrl")).origin}/s/compactor-request/v1`,
        // The provider profile "fakex": the memory-extraction tests' own session, where they script
        // the extractor's replies (valid facts, or invalid output) beside the compactor's.
        OPENAI_API_KEY_FAKEX: "test-key",
        OPENAI_BASE_URL_FAKEX: `${new URL(inject("fakeOpenAiBaseUrl")).origin}/s/memory-extraction/v1`,
        // The provider profile "fakelive": the liveness tests' own session, where a plan's model keeps failing.
        OPENAI_API_KEY_FAKERQ: "test-key",
        OPENAI_BASE_URL_FAKERQ: `${new URL(inject("fakeOpenAiBaseUrl")).origin}/s/reply-queue/v1`,
        OPENAI_EXTRACTION_FAKERQ: "offline",
        OPENAI_API_KEY_FAKELIVE: "test-key",
        OPENAI_BASE_URL_FAKELIVE: `${new URL(inject("fakeOpenAiBaseUrl")).origin}/s/liveness-attempts/v1`,
        OPENAI_EXTRACTION_FAKELIVE: "offline",
        // The other fake profiles extract offline, so the requests their files read are their
        // compactors' and agents' only; extraction through a model is the "fakex" session's to test.
        OPENAI_EXTRACTION_FAKE: "offline",
        OPENAI_EXTRACTION_FAKETG: "offline",
        OPENAI_EXTRACTION_FAKEISO: "offline",
        OPENAI_EXTRACTION_FAKECM: "offline",
        OPENAI_EXTRACTION_FAKEREQ: "offline",
        // The external bot tests (test/fake-bot): the fake's key, and a key it does not share.
        BOT_HMAC_SECRET: inject("fakeBotSecret"),
        BOT_HMAC_WRONG: "not-the-fake-bots-key",
        // The D1 meter (bench/worker/d1-meter) is available to a request that asks for it, so the tests
        // can count an append's round trips in the Worker and in the conversation's object.
        D1_METER: "on",
        // Cloudflare's per-invocation limits (bench/worker/limits), which local workerd does not
        // enforce: a call past one throws as the platform's would, and test/limits-check.ts fails
        // the test that made it, even when the code under test caught the throw.
        PLATFORM_LIMITS: "enforce",
      },
      // wrangler.toml's object, and the Agents SDK's Sessions that `foldline/agents` mirrors (test/client/agents.test.ts).
      durableObjects: { CONVERSATION: { className: "ConversationObject", useSQLite: true }, AGENT_SESSIONS: { className: "AgentSessionsHost", useSQLite: true } },
      serviceBindings: { ECHO_BOT: { name: "echo-bot", entrypoint: "EchoBot" } },
      workers: [{ name: "echo-bot", modules: true, script: ECHO_BOT_SCRIPT, compatibilityDate: "2026-11-01" }],
    },
  };
}

/**
 * The liveness tests (test/liveness/): the same Worker with the watchdog and stall thresholds in
 * seconds, and a compaction queue whose only consumer is a recorder that runs nothing, so every job
 * "vanishes" the way a job lost in a crash does, each test delivers jobs itself
 * (`createMessageBatch`), and a test can still read which jobs the object sent. They run as their
 * own project because these settings would re-send the in-flight jobs of every other test.
 */
const LIVENESS_TESTS = "test/liveness/**/*.test.ts";
const LIVENESS_QUEUE = "foldline-liveness-jobs";
const LIVENESS_OPERATOR_CHAT = `${TEST_BOT_ID}:-1009990001`;
export const QUEUE_RECORDER_SCRIPT = `
const sent = [];
export default {
  queue(batch) {
    for (const message of batch.messages) sent.push(message.body);
    batch.ackAll();
  },
  fetch() { return Response.json(sent); },
};
`;

/**
 * Files that own what every other file shares, so they run one at a time, after the rest, each in
 * a workerd of its own: the dispatch tests script the fake Bot API's default session, the one the
 * test bot's token reaches, and any other file's Telegram reply running beside them would take
 * their scripted answers; the authorization matrix compares every D1 row and R2 object before and
 * after each refused call, which another file's compaction settling in the same workerd would move;
 * the replay's compactor-input ratio depends on how far its ingest outruns the queue, so it is
 * measured with nothing else competing for the cores (alone it reads 1.10; beside three busy files
 * it reached 1.152 against its bound of 1.15).
 */
const EXCLUSIVE_TESTS = ["test/integration/telegram-dispatch.test.ts", "test/integration/authorization-matrix.test.ts", "test/integration/compaction-replay.test.ts"];

/**
 * The operator alert tests: the same Worker with OPS_ALERT_URL pointing at a loopback webhook
 * (test/fake-alerts). They run as their own project, in a workerd of their own, because alerts are
 * rate-limited per incident kind across the whole deployment: every other file's incidents would
 * count against the limit they test, and be posted to their webhook.
 */
const ALERT_TESTS = "test/integration/alerts.test.ts";

/** The pure core's tests run in plain Node, as the project `vitest.core.config.ts` defines. */
const CORE_TESTS = "test/core/**/*.test.ts";

/**
 * The schema's compatibility with older SQLite builds (test/schema/): each database built from the
 * migrations with node:sqlite and read back by Debian 12's `sqlite3`, a process the test spawns. It
 * needs no binding, so it runs in plain Node, as the core's tests do, not in workerd (which cannot
 * spawn one).
 */
const SCHEMA_TESTS = "test/schema/**/*.test.ts";
/** The type-level tests (test/types/*.test-d.ts), checked by vitest's typecheck mode. */
const TYPE_TESTS = "test/types/**/*.test-d.ts";
/** The operator's command-line scripts, run by Node as an operator runs them. */
const SCRIPT_TESTS = "test/scripts/**/*.test.ts";

/** The fault matrix runs on its own, with its own config (`npm run faults`, vitest.faults.config.ts). */
export const FAULT_TESTS = "test/faults/**/*.test.ts";

/** The control and shard migrations, as the setup file applies them (test/apply-migrations.ts). */
export async function testMigrations(): Promise<Migrations> {
  return {
    control: await readD1Migrations(path.join(import.meta.dirname, "migrations", "control")),
    shard: await readD1Migrations(path.join(import.meta.dirname, "migrations", "shard")),
  };
}

export default defineConfig(async () => {
  const migrations = await testMigrations();
  const test = {
    globalSetup: ["./test/fake-openai/global-setup.ts", "./test/fake-telegram/global-setup.ts", "./test/fake-bot/global-setup.ts"],
    setupFiles: ["./test/apply-migrations.ts", "./test/limits-check.ts"],
    // Integration tests wait for queued compactions; they poll with their own deadlines.
    testTimeout: 60_000,
    // The Worker logs a line per append, plan, job and settlement (src/logger.ts), and its
    // background work (queue consumer, alarms) can still be logging when a file's workerd is torn
    // down: forwarding those lines to the runner then fails the run ("Closing rpc while
    // onUserConsoleLog was pending"). They go to workerd's own output instead; tests that read
    // log lines spy on `console` inside the isolate, which this leaves as it is.
    disableConsoleIntercept: true,
  };
  return {
    test: {
      // Integration test files spend most of their time waiting (workerd starting, queues, alarms,
      // loopback fakes), not computing: vitest's default of cores − 1 runs them one at a time on a
      // two-core machine. Each file gets its own workerd and its own storage, so they can overlap.
      maxWorkers: 4,
      projects: [
        "./vitest.core.config.ts",
        { test: { name: "schema", environment: "node", include: [SCHEMA_TESTS] } },
        { test: { name: "scripts", environment: "node", include: [SCRIPT_TESTS] } },
        // Type-level assertions (`expectTypeOf`, `@ts-expect-error`): type-checked by vitest's
        // typecheck mode, never run, so `npm test` fails when one does.
        { test: { name: "types", include: [], typecheck: { enabled: true, only: true, include: [TYPE_TESTS], tsconfig: "./tsconfig.json" } } },
        {
          plugins: [cloudflareTest(({ inject }) => workers(migrations, inject))],
          // One workerd per worker, reused by the files it runs (not restarted for each): every
          // file works in conversations, agents and fake sessions of its own.
          test: { ...test, name: "workers", isolate: false, include: ["test/**/*.test.ts"], exclude: [LIVENESS_TESTS, CORE_TESTS, SCHEMA_TESTS, SCRIPT_TESTS, FAULT_TESTS, ALERT_TESTS, ...EXCLUSIVE_TESTS] },
        },
        {
          plugins: [cloudflareTest(({ inject }) => workers(migrations, inject))],
          // After every other file, one at a time (see EXCLUSIVE_TESTS).
          test: { ...test, name: "exclusive", include: EXCLUSIVE_TESTS, maxWorkers: 1, sequence: { groupOrder: 1 } },
        },
        {
          plugins: [
            cloudflareTest(({ inject }) => {
              const base = workers(migrations, inject);
              return {
                ...base,
                miniflare: { ...base.miniflare, bindings: { ...base.miniflare.bindings, OPS_ALERT_URL: `${inject("fakeAlertsOrigin")}/alerts`, OPS_ALERT_SECRET: inject("fakeAlertsSecret") } },
              };
            }),
          ],
          test: { ...test, name: "alerts", include: [ALERT_TESTS], globalSetup: [...test.globalSetup, "./test/fake-alerts/global-setup.ts"] },
        },
        {
          plugins: [
            cloudflareTest(({ inject }) => {
              const base = workers(migrations, inject);
              return {
                ...base,
                miniflare: {
                  ...base.miniflare,
                  bindings: {
                    ...base.miniflare.bindings,
                    PLAN_WATCHDOG_SECONDS: "1",
                    PLAN_STALLED_SECONDS: "3",
                    COMPACTION_BACKOFF_BASE_SECONDS: "1",
                    // A chain whose agent caps 8 messages is behind past 48 uncovered events (test/liveness/hot-window.test.ts).
                    HOT_WINDOW_EVENTS: "48",
                    // Incident summaries are queued too, so the recorder shows what the operator is told.
                    OPERATOR_CHAT: LIVENESS_OPERATOR_CHAT,
                  },
                  // Both queues into the recorder: what the operator is told travels on the reply queue.
                  queueProducers: { JOB_QUEUE: { queueName: LIVENESS_QUEUE }, REPLY_QUEUE: { queueName: LIVENESS_QUEUE } },
                  serviceBindings: { ...base.miniflare.serviceBindings, QUEUE_RECORDER: "queue-recorder" },
                  workers: [
                    ...base.miniflare.workers,
                    { name: "queue-recorder", modules: true, script: QUEUE_RECORDER_SCRIPT, compatibilityDate: "2026-11-01", queueConsumers: { [LIVENESS_QUEUE]: { maxBatchTimeout: 0 } } },
                  ],
                },
              };
            }),
          ],
          test: { ...test, name: "liveness", include: [LIVENESS_TESTS] },
        },
      ],
    },
  };
});
