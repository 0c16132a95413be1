import type { TestProject } from "vitest/node";
import { startFakeTelegram } from "./server";

/**
 * Starts the loopback fake Bot API once for the whole run (in Node, outside workerd) and hands its
 * origin to the Workers pool config (`inject` in vitest.config.ts, as TELEGRAM_API_BASE_URL) and
 * to tests (`inject` from "vitest").
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const fake = await startFakeTelegram();
  project.provide("fakeTelegramOrigin", fake.origin);
  return () => fake.close();
}
