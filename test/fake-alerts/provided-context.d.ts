export {};

declare module "vitest" {
  export interface ProvidedContext {
    /** Origin (`http://127.0.0.1:<port>`) of the loopback operator webhook; see test/fake-alerts/server.ts. */
    fakeAlertsOrigin: string;
    /** The key alerts are signed with, bound as the Worker secret OPS_ALERT_SECRET. */
    fakeAlertsSecret: string;
  }
}
