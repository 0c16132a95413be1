import type { FC, PropsWithChildren } from "hono/jsx";
import { html } from "hono/html";
import { INSPECTOR_ROOT, LOGOUT_PATH } from "../paths";

/**
 * The page frame. Its stylesheet is inline (the CSP allows inline styles and nothing else to
 * load), and it is rendered as an ordinary escaped text child: keep it free of `<`, `>`, `&` and
 * quotes, which escaping would change.
 */
const STYLESHEET = `
body{font:14px/1.45 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
header{display:flex;align-items:center;justify-content:space-between;padding:.6rem 1.2rem;background:#1d2330;color:#fff}
header a{color:#fff;text-decoration:none;font-weight:600}
main{padding:1rem 1.2rem;max-width:1280px}
section{background:#fff;border:1px solid #dde1e7;border-radius:6px;padding:.8rem 1rem;margin:0 0 1rem}
h1{font-size:1.25rem;margin:.2rem 0 .8rem;word-break:break-all}
h2{font-size:1.05rem;margin:0 0 .6rem}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;padding:.3rem .5rem;border-bottom:1px solid #eef0f3;vertical-align:top}
th{font-weight:600;color:#5b6475}
code{font-family:ui-monospace,monospace;font-size:12px;word-break:break-all}
.badge{display:inline-block;padding:0 .45rem;border-radius:9px;font-size:12px;font-weight:600;background:#e8ebf0;white-space:nowrap}
.ok{background:#dff3e4;color:#17612e}
.bad{background:#fbe1e1;color:#8a1c1c}
.warn{background:#fdf0d5;color:#7a4b00}
.muted{color:#6b7385}
.verdict{font-size:1rem;padding:.4rem .7rem;border-radius:4px;display:inline-block}
.bar{position:relative;height:34px;background:#eef0f3;border-radius:4px;margin:1.8rem 0 .8rem}
.seg{position:absolute;top:0;bottom:0}
.seg-boundary{background:#5b6cff}
.seg-amendment{background:#f2a33a}
.seg-tail{background:#38a169}
.mark{position:absolute;top:-1.4rem;bottom:-4px;border-left:2px dashed #1d2330}
.mark span{position:absolute;top:0;left:4px;font-size:11px;white-space:nowrap}
.mark-retain{border-left-color:#8a94a6}
.failure{border-left:4px solid #c53030;background:#fbe1e1;padding:.6rem .8rem}
.swatch{display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:.3rem}
.chart{display:block;width:100%;max-width:760px;height:auto}
.chart text{font-size:11px;fill:#5b6475}
.legend{margin-right:1rem;white-space:nowrap}
.pager a,.picker a{margin-right:.8rem}
.picker .current{font-weight:700}
.text{white-space:pre-wrap;word-break:break-word}
form.inline{display:inline;margin:0}
button{font:inherit;padding:.3rem .8rem;cursor:pointer}
input[type=password]{font:inherit;padding:.3rem;width:28rem;max-width:100%}
`;

export const Layout: FC<PropsWithChildren<{ title: string; signedIn: boolean }>> = ({ title, signedIn, children }) => (
  <>
    {html`<!DOCTYPE html>`}
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>{`${title} · Foldline inspector`}</title>
        {/* An empty icon: otherwise every page view asks for /favicon.ico and logs a 404. */}
        <link rel="icon" href="data:," />
        <style>{STYLESHEET}</style>
      </head>
      <body>
        <header>
          <a href={INSPECTOR_ROOT}>Foldline inspector</a>
          {signedIn ? (
            <form class="inline" method="post" action={LOGOUT_PATH}>
              <button type="submit">Sign out</button>
            </form>
          ) : null}
        </header>
        <main>{children}</main>
      </body>
    </html>
  </>
);
