import { app } from "./http/app";
import { consumeBatch } from "./queue/consumer";

export { ConversationObject } from "./durable/conversation-object";

export default {
  fetch: app.fetch,
  queue: (batch) => consumeBatch(batch),
} satisfies ExportedHandler<Env, unknown>;
