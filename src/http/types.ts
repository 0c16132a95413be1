import type { D1Reads } from "../storage/d1-meter";
import type { ApiPrincipal } from "../storage/control/tokens";

export interface AppEnv {
  Bindings: Env;
  Variables: {
    principal: ApiPrincipal;
    /** Set on metered requests only (`http/d1-meter`): the conversation's object's share of the reads. */
    objectD1Reads: () => Promise<D1Reads>;
  };
}
