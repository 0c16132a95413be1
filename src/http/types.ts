import type { ApiPrincipal } from "../storage/control/tokens";

export interface AppEnv {
  Bindings: Env;
  Variables: {
    principal: ApiPrincipal;
  };
}
