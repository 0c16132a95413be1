import { z } from "zod";
import type { Registration } from "./declarations";

/**
 * What a registration accepts but an operator should know before relying on it. Warnings never
 * refuse a pair (the pair is consistent); they say what it will and will not do.
 */
export const registrationWarningSchema = z.strictObject({
  code: z.enum(["boundaries_never_served"]),
  message: z.string(),
});
export type RegistrationWarning = z.infer<typeof registrationWarningSchema>;

export function registrationWarnings(registration: Registration): RegistrationWarning[] {
  const { agent, compactor } = registration;
  if (agent.admitSensitive) return [];
  // Boundaries summarize whatever history held, so they are always sensitive: an agent that does
  // not admit sensitive content is served exact turns only, and its compactor's work never reaches it.
  return [
    {
      code: "boundaries_never_served",
      message:
        `${agent.id} does not admit sensitive content, and boundaries are always sensitive: ${compactor.id}'s boundaries can never be served to it. ` +
        `It is served the exact admitted turns of the whole history, newest first, up to its own maxChars and maxMessages (the rest reported in manifest.omitted), ` +
        `while ${compactor.id} still runs at its trigger.`,
    },
  ];
}
