import { app } from "./http/app";
import { consumeBatch } from "./queue/consumer";

export { ConversationObject } from "./durable/conversation-object";
export { FoldlineRpc } from "./rpc/entrypoint";

export default {
  fetch: app.fetch,
  queue: (batch, env) => consumeBatch(batch, env),
} satisfies ExportedHandler<Env, unknown>;
