import type { FC } from "hono/jsx";
import { Layout } from "./layout";

/** A refusal or failure as a page. It names the code and message only, never the requested ids. */
export const ErrorPage: FC<{ status: number; code: string; message: string; signedIn: boolean }> = ({ status, code, message, signedIn }) => (
  <Layout title={`${status} ${code}`} signedIn={signedIn}>
    <section>
      <h1>
        {status} <code>{code}</code>
      </h1>
      <p class="failure" data-testid="error" data-code={code}>
        {message}
      </p>
    </section>
  </Layout>
);
