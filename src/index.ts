import { app } from "./http/app";
import { consumeBatch } from "./queue/consumer";
import { countDeliveries, meteredEnv } from "./storage/usage-meter";

export { ConversationObject } from "./durable/conversation-object";
export { FoldlineRpc } from "./rpc/entrypoint";

export default {
  // The benchmark's usage ledger (storage/usage-meter) wraps the bindings only where D1_METER is on.
  fetch: (request, env, ctx) => app.fetch(request, meteredEnv(env), ctx),
  queue: (batch, env) => {
    countDeliveries(env, batch.messages);
    return consumeBatch(batch, meteredEnv(env));
  },
} satisfies ExportedHandler<Env, unknown>;
