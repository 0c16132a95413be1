import type { FC } from "hono/jsx";
import { raw } from "hono/html";
import { LOGIN_PATH } from "../paths";
import { Layout } from "./layout";

/**
 * Lets a start script print one clickable link, `/inspector/login#token=…`: a fragment never
 * reaches a server or its logs. The script drops the fragment from the address bar and history,
 * fills the token in and posts the form. It is a constant (never data), the only markup the
 * inspector emits unescaped, and it runs only under the response's CSP nonce.
 */
const FRAGMENT_LOGIN_SCRIPT = `(function () {
  var match = /(?:^#|&)token=([^&]*)/.exec(location.hash);
  if (!match) return;
  history.replaceState(null, "", location.pathname + location.search);
  var form = document.getElementById("login");
  form.elements.namedItem("token").value = decodeURIComponent(match[1]);
  form.submit();
})();`;

export const LoginPage: FC<{ nonce: string; error?: string | undefined }> = ({ nonce, error }) => (
  <Layout title="Sign in" signedIn={false}>
    <section>
      <h1>Sign in</h1>
      <p class="muted">An API token (the same as for /v1); the inspector shows only the conversations its scopes allow.</p>
      {error === undefined ? null : (
        <p class="failure" data-testid="login-error">
          {error}
        </p>
      )}
      <form id="login" method="post" action={LOGIN_PATH}>
        <p>
          <label>
            API token <input type="password" name="token" autocomplete="off" required />
          </label>
        </p>
        <button type="submit">Sign in</button>
      </form>
    </section>
    <script nonce={nonce}>{raw(FRAGMENT_LOGIN_SCRIPT)}</script>
  </Layout>
);
