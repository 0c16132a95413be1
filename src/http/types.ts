import type { ApiPrincipal } from "../storage/token-store";

export interface AppEnv {
  Bindings: Env;
  Variables: { principal: ApiPrincipal };
}
