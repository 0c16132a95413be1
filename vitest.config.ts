import path from "node:path";
import { cloudflareTest, readD1Migrations } from "@cloudflare/vitest-plugin";
import { defineConfig } from "vitest/config";
import "./scripts/offline-env.mjs";

/** Secrets the tests configure; each test file reads them from `env`. */
export const TEST_BOT_ID = "7001";

export default defineConfig(async () => {
  const migrations = await readD1Migrations(path.join(import.meta.dirname, "migrations"));
  return {
    plugins: [
      cloudflareTest(({ inject }) => ({
        wrangler: { configPath: "./wrangler.toml" },
        miniflare: {
          bindings: {
            TEST_MIGRATIONS: migrations,
            [`TELEGRAM_WEBHOOK_SECRET_${TEST_BOT_ID}`]: "test-webhook-secret-7001",
            // The loopback fake model endpoint (test/fake-openai). No OPENAI_API_KEY is bound, so
            // tests use the offline compactor unless they pass a key explicitly.
            OPENAI_BASE_URL: inject("fakeOpenAiBaseUrl"),
          },
        },
      })),
    ],
    test: {
      globalSetup: ["./test/fake-openai/global-setup.ts"],
      setupFiles: ["./test/apply-migrations.ts"],
      include: ["test/**/*.test.ts"],
    },
  };
});
