import type { TestProject } from "vitest/node";
import { startFakeAlerts } from "./server";

/**
 * Starts the loopback operator webhook for the alerts project (vitest.config.ts) and hands its
 * origin and signing key to the Workers pool config (`inject`, bound as OPS_ALERT_URL and
 * OPS_ALERT_SECRET) and to the tests (`inject` from "vitest").
 */
export default async function setup(project: TestProject): Promise<() => Promise<void>> {
  const fake = await startFakeAlerts();
  project.provide("fakeAlertsOrigin", fake.origin);
  project.provide("fakeAlertsSecret", fake.secret);
  return () => fake.close();
}
