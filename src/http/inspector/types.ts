import type { ApiPrincipal } from "../../storage/control/tokens";

export interface InspectorEnv {
  Bindings: Env;
  Variables: {
    /** The token's principal, set by `requireSession` on every page behind the login. */
    principal: ApiPrincipal;
    /** Set by a page that renders an inline script; the CSP then allows exactly that script. */
    scriptNonce: string | undefined;
  };
}
