import type { TestProject } from "vitest/node";
import { startFakeOpenAi } from "./server";

/**
 * Starts the loopback fake OpenAI-compatible server once for the whole run (in Node, outside
 * workerd) and hands its base URL to the Workers pool config (`inject` in vitest.config.ts) and to
 * tests (`inject` from "vitest").
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const fake = await startFakeOpenAi();
  project.provide("fakeOpenAiBaseUrl", fake.baseUrl);
  return () => fake.close();
}
