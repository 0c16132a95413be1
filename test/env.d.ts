import type { D1Migration } from "@cloudflare/vitest-plugin";

declare global {
  namespace Cloudflare {
    interface Env {
      /** Test-only: the control and shard D1 migrations, read by vitest.config.ts and applied by test/apply-migrations.ts. */
      TEST_MIGRATIONS_CONTROL: D1Migration[];
      TEST_MIGRATIONS_SHARD: D1Migration[];
      /** The tests run three shards (vitest.config.ts); wrangler.toml binds two. */
      DB_SHARD_2: D1Database;
      /** Unmigrated databases of the backfill tests (vitest.config.ts). */
      BACKFILL_CONTROL: D1Database;
      BACKFILL_SHARD: D1Database;
      TELEGRAM_WEBHOOK_SECRET_7001: string;
      /** Liveness project only (vitest.config.ts): every job the Worker sent to its compaction queue, oldest first. */
      QUEUE_RECORDER: Fetcher;
      /** The Agents SDK's Sessions on a Durable Object, mirrored by `foldline/agents` (bench/worker/agents-host.ts). */
      AGENT_SESSIONS: DurableObjectNamespace<import("../bench/worker/agents-host").AgentSessionsHost>;
    }
  }
}
