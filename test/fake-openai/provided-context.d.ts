export {};

declare module "vitest" {
  export interface ProvidedContext {
    /** Base URL (`http://127.0.0.1:<port>/v1`) of the fake OpenAI-compatible server; see test/fake-openai/server.ts. */
    fakeOpenAiBaseUrl: string;
  }
}
