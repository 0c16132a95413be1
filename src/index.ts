import { app } from "./http/app";
import { attachMetrics } from "./logger";
import { consumeBatch } from "./queue/consumer";

export { ConversationObject } from "./durable/conversation-object";
export { FoldlineRpc } from "./rpc/entrypoint";

export default {
  fetch: (request, env, ctx) => {
    attachMetrics(env);
    return app.fetch(request, env, ctx);
  },
  queue: (batch, env) => {
    attachMetrics(env);
    return consumeBatch(batch, env);
  },
} satisfies ExportedHandler<Env, unknown>;
