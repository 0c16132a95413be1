export {};

declare module "vitest" {
  export interface ProvidedContext {
    /** Origin (`http://127.0.0.1:<port>`) of the fake external bot; see test/fake-bot/server.ts. */
    fakeBotOrigin: string;
    /** The HMAC key the fake bot verifies with, bound as the Worker secret BOT_HMAC_SECRET. */
    fakeBotSecret: string;
  }
}
