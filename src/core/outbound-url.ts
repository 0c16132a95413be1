/**
 * Where Foldline may POST a body it signs (an `http` bot's request, an operator alert): https
 * anywhere, plain http only on the loopback (local development and tests). The body is signed, not
 * encrypted, so a remote plain-http endpoint would show it to every network on the way; and a URL
 * with credentials in it would put them in every log that records the URL.
 */
export function isOutboundUrl(text: string): boolean {
  const url = URL.parse(text);
  if (url === null || url.username !== "" || url.password !== "") return false;
  return url.protocol === "https:" || (url.protocol === "http:" && (url.hostname === "127.0.0.1" || url.hostname === "localhost"));
}
