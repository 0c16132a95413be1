import { app } from "./http/app";
import { attachMetrics } from "./logger";
import { consumeBatch } from "./queue/consumer";
import { simulatedD1Env } from "./storage/d1-simulation";
import { countDeliveries, meteredEnv } from "./storage/usage-meter";

export { ConversationObject } from "./durable/conversation-object";
export { FoldlineRpc } from "./rpc/entrypoint";

export default {
  // The benchmark's usage ledger (storage/usage-meter) wraps the bindings only where USAGE_METER is on,
  // and its D1 simulation (storage/d1-simulation) only where D1_SIMULATED_STATEMENT_MS is above 0.
  fetch: (request, env, ctx) => {
    attachMetrics(env);
    return app.fetch(request, meteredEnv(simulatedD1Env(env)), ctx);
  },
  queue: (batch, env) => {
    attachMetrics(env);
    countDeliveries(env, batch.messages);
    return consumeBatch(batch, meteredEnv(simulatedD1Env(env)));
  },
} satisfies ExportedHandler<Env, unknown>;
