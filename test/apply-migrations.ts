import { applyD1Migrations } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { shardsOf } from "../src/storage/shards";

// The control set to the control database, the shard set to every shard (three in the tests).
await applyD1Migrations(env.DB, env.TEST_MIGRATIONS_CONTROL);
for (const shard of shardsOf(env)) await applyD1Migrations(shard.db, env.TEST_MIGRATIONS_SHARD);
