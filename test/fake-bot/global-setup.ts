import type { TestProject } from "vitest/node";
import { startFakeBot } from "./server";

/**
 * Starts the loopback fake external bot once for the whole run (in Node, outside workerd) and
 * hands its origin and shared key to the Workers pool config (`inject` in vitest.config.ts, the key
 * as BOT_HMAC_SECRET) and to tests (`inject` from "vitest").
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const fake = await startFakeBot();
  project.provide("fakeBotOrigin", fake.origin);
  project.provide("fakeBotSecret", fake.secret);
  return () => fake.close();
}
