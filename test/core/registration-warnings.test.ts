import { describe, expect, it } from "vitest";
import type { Registration } from "../../src/core/declarations";
import { registrationWarningSchema, registrationWarnings } from "../../src/core/registration-warnings";

const pair = (admitSensitive: boolean): Registration =>
  ({ agent: { id: "helper", admitSensitive }, compactor: { id: "helper.compactor" } }) as unknown as Registration;

describe("registrationWarnings", () => {
  it("says nothing for an agent that admits sensitive content (its boundaries reach it)", () => {
    expect(registrationWarnings(pair(true))).toEqual([]);
  });

  it("warns once, naming both declarations, when the agent can never be served its compactor's boundaries", () => {
    const warnings = registrationWarnings(pair(false));
    expect(warnings).toHaveLength(1);
    const [warning] = warnings;
    expect(registrationWarningSchema.parse(warning)).toEqual(warning);
    expect(warning?.code).toBe("boundaries_never_served");
    expect(warning?.message).toMatch(/^helper does not admit sensitive content, and boundaries are always sensitive: helper\.compactor's boundaries can never be served to it\. /);
    expect(warning?.message).toContain("manifest.omitted");
    expect(warning?.message).toMatch(/while helper\.compactor still runs at its trigger\.$/);
  });
});
