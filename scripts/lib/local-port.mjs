// The one port setting of the local service: FOLDLINE_PORT (default 8787) is where `npm start`
// listens, where `npm run demo` and `npm run reset` look for it, what the README's curl tour
// uses, and the port the browser test tries first. Built here only, so they cannot drift apart.

export const DEFAULT_PORT = 8787;

/**
 * FOLDLINE_PORT as a port number, the default when it is unset or empty.
 * @param {NodeJS.ProcessEnv} [env]
 */
export function localPort(env = process.env) {
  const raw = env.FOLDLINE_PORT?.trim();
  if (raw === undefined || raw === "") return DEFAULT_PORT;
  const port = Number(raw);
  if (!/^\d+$/.test(raw) || port < 1 || port > 65_535) {
    console.error(`FOLDLINE_PORT=${JSON.stringify(raw)} is not a port (1–65535); unset it for ${DEFAULT_PORT}.`);
    process.exit(2);
  }
  return port;
}

/** The loopback URL of the local service on `port`. @param {number} port */
export const localUrl = (port) => `http://127.0.0.1:${port}`;
