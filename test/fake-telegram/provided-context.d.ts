export {};

declare module "vitest" {
  export interface ProvidedContext {
    /** Origin (`http://127.0.0.1:<port>`) of the fake Telegram Bot API; see test/fake-telegram/server.ts. */
    fakeTelegramOrigin: string;
  }
}
