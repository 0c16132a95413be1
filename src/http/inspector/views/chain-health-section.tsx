import type { FC } from "hono/jsx";
import type { ChainListing } from "../../../api/chain";
import type { Result } from "../../../core/errors";
import { Failure } from "./failure";

/**
 * Is the chain moving? What an operator paged at night looks at first: the plan in flight and
 * how long it has been open, how often its job was sent and failed, when the object wakes next,
 * the backoff after a dead-letter, whether the chain fell behind its log, and the newest failure. All of it from `listChain`'s `health`.
 */
// Longer than the house's ~60 lines: one section's markup, read top to bottom as the page shows it.
export const ChainHealthSection: FC<{ listing: Result<ChainListing> }> = ({ listing }) => {
  if (!listing.ok) {
    return (
      <section>
        <h2>Chain health</h2>
        <Failure testid="chain-health-error" error={listing.error} />
      </section>
    );
  }
  const health = listing.value.health;
  if (health === null) {
    return (
      <section>
        <h2>Chain health</h2>
        <p class="muted" data-testid="chain-health" data-state="not-serving">
          The agent does not serve this conversation.
        </p>
      </section>
    );
  }
  const plan = health.openPlan;
  const state = !health.activated ? "inactive" : plan !== null ? "in-flight" : health.replanAt !== null ? "backing-off" : "idle";
  return (
    <section>
      <h2>Chain health</h2>
      <dl data-testid="chain-health" data-state={state}>
        <dt>state</dt>
        <dd>
          {!health.activated
            ? "not activated: no eligible message for this agent here yet"
            : plan !== null
              ? "compaction in flight"
              : health.replanAt !== null
                ? "backing off after a dead-lettered compaction"
                : "idle: nothing in flight"}
        </dd>
        <dt>head</dt>
        <dd>{health.headId === null ? <span class="muted">none</span> : <code>{health.headId}</code>}</dd>
        {plan === null ? null : (
          <>
            <dt>open plan</dt>
            <dd data-testid="open-plan" data-run-id={plan.runId} data-age-seconds={String(plan.ageSeconds)} data-dispatches={String(plan.dispatches)}>
              <code>{plan.runId}</code>, open {plan.ageSeconds} s (since {plan.createdAt}); job sent {plan.dispatches}×, {plan.failedAttempts} failed{" "}
              {plan.failedAttempts === 1 ? "attempt" : "attempts"}
            </dd>
            <dt>next wake-up</dt>
            <dd data-testid="next-wake">{plan.nextWakeAt ?? <span class="muted">none recorded</span>}</dd>
          </>
        )}
        {health.behindThroughSeq === null ? null : (
          <>
            <dt>behind</dt>
            <dd data-testid="behind" data-through-seq={String(health.behindThroughSeq)}>
              holds its uncovered history through seq {health.behindThroughSeq} only; its context is refused until its compactions catch up
            </dd>
          </>
        )}
        {health.replanAt === null ? null : (
          <>
            <dt>re-plans at</dt>
            <dd data-testid="replan-at">{health.replanAt}</dd>
          </>
        )}
        <dt>last failure</dt>
        <dd data-testid="last-failure" data-kind={health.lastFailure?.kind ?? ""}>
          {health.lastFailure === null ? (
            <span class="muted">none</span>
          ) : (
            <>
              <code>{health.lastFailure.kind}</code> <code>{health.lastFailure.code}</code> at {health.lastFailure.createdAt}: {health.lastFailure.message}
            </>
          )}
        </dd>
      </dl>
    </section>
  );
};
