import product from "../../src/index";
import { ConversationObject as ProductObject } from "../../src/durable/conversation-object";
import { mapDatabases } from "./databases";
import type { D1Reads } from "./d1-meter";
import { D1Meter, d1MeterEnabled, meteredD1 } from "./d1-meter";
import { meteredFetch } from "./d1-meter-http";
import { PEER_ROUTE_PREFIX, peerRoute } from "./peer-route";
import { simulatedD1Env } from "./d1-simulation";
import { invocation, limitedEnv } from "./limits";
import { countAlarm, countDeliveries, meteredEnv } from "./usage-meter";

/**
 * Foldline with the benchmark's instruments, for the benchmark and the integration tests that
 * count what a request costs: the product's Worker and conversation object, each given an env
 * whose bindings pass through the meters first. Each instrument is off unless its var says so:
 * the usage ledger of every binding (`usage-meter`, USAGE_METER), the reads-per-request meter
 * (`d1-meter`, D1_METER, asked for per request by header) and the D1 simulation of the shard
 * section (`d1-simulation`, D1_SIMULATED_STATEMENT_MS), and Cloudflare's per-invocation limits
 * (`limits`, PLATFORM_LIMITS), counted per invocation of the Worker and of each object. Production
 * deploys `src/index.ts`, which constructs none of them.
 */

export { FoldlineRpc } from "../../src/index";
// The Agents SDK's Sessions with `foldline/agents` mirroring them (the tests bind it as AGENT_SESSIONS).
export { AgentSessionsHost } from "./agents-host";
// The Agents SDK's Sessions alone, with its own compaction and search: the bench's peer section (PEER_SESSIONS).
export { PeerSessions } from "./peer-sessions";

const instrumented = (env: Env): Env => limitedEnv(meteredEnv(simulatedD1Env(env)));

/** The product's object over instrumented bindings, with the D1 meter's share of a metered request. */
export class ConversationObject extends ProductObject {
  readonly #meter = new D1Meter();

  constructor(ctx: DurableObjectState, env: Env) {
    super(ctx, env);
    // The object reads every binding from `this.env` after construction (never from `env`).
    const metered = instrumented(env);
    this.env = d1MeterEnabled(env) ? mapDatabases(metered, (db, name) => meteredD1(db, this.#meter, name)) : metered;
  }

  /** Starts counting this object's D1 reads for one metered request. */
  armD1Meter(): void {
    this.#meter.arm();
  }

  /** What this object read from D1 since `armD1Meter`. */
  takeD1Reads(): D1Reads {
    return this.#meter.take();
  }

  /** The object's own SQLite size (`databaseSize`): the bench's peer section counts it with Foldline's storage. */
  storageBytes(): number {
    return this.ctx.storage.sql.databaseSize;
  }

  override async alarm(): Promise<void> {
    countAlarm(this.env);
    await invocation("object alarm", this.env, () => super.alarm());
  }
}

// Each RPC method of the product's object, as an invocation of its own (the platform counts its
// limits per call into an object). Methods are found on the product's prototype, so a new one is
// counted without a change here.
for (const name of Object.getOwnPropertyNames(ProductObject.prototype)) {
  const method: unknown = Reflect.get(ProductObject.prototype, name);
  if (name === "constructor" || name === "alarm" || typeof method !== "function") continue;
  Object.defineProperty(ConversationObject.prototype, name, {
    configurable: true,
    writable: true,
    value(this: ConversationObject, ...args: unknown[]) {
      return invocation(`object ${name}`, this.env, () => Reflect.apply(method, this, args) as unknown);
    },
  });
}

export default {
  fetch: async (request, env, ctx) => {
    const bench = new URL(request.url).pathname.startsWith(PEER_ROUTE_PREFIX) ? await peerRoute(request, env) : null;
    return bench ?? invocation(`fetch ${new URL(request.url).pathname}`, env, () => meteredFetch(request, env, async (metered) => product.fetch(request, instrumented(metered), ctx)));
  },
  queue: (batch, env) =>
    invocation(`queue ${batch.queue} (${batch.messages.length} messages)`, env, () => {
      countDeliveries(env, batch.messages);
      return product.queue(batch, instrumented(env));
    }),
} satisfies ExportedHandler<Env, unknown>;
