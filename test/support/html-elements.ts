/** The attributes of every element matching `selector` in `html`, in document order (workerd's HTMLRewriter). */
export async function elements(html: string, selector: string): Promise<Record<string, string>[]> {
  const found: Record<string, string>[] = [];
  await new HTMLRewriter()
    .on(selector, {
      element(element) {
        found.push(Object.fromEntries([...element.attributes].map(([name, value]) => [name ?? "", value ?? ""])));
      },
    })
    .transform(new Response(html))
    .text();
  return found;
}
