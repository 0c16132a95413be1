import type { D1Migration } from "@cloudflare/vitest-plugin";

declare global {
  namespace Cloudflare {
    interface Env {
      /** Test-only: the D1 migrations, read by vitest.config.ts and applied by test/apply-migrations.ts. */
      TEST_MIGRATIONS: D1Migration[];
      TELEGRAM_WEBHOOK_SECRET_7001: string;
      /** Liveness project only (vitest.config.ts): every job the Worker sent to its compaction queue, oldest first. */
      QUEUE_RECORDER: Fetcher;
    }
  }
}
