/** Small helpers shared by the data-path tests: scrape sums and bounded polling. */

/** Sums the samples of `name` in Prometheus text whose labels include all of `want`. */
export function metric(text: string, name: string, want: Record<string, string>): number {
  let sum = 0;
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`) && !line.startsWith(`${name} `)) continue;
    if (Object.entries(want).every(([k, v]) => line.includes(`${k}="${v}"`))) {
      sum += Number(line.split(" ").pop());
    }
  }
  return sum;
}

/** Polls `fn` every 200 ms until it returns a value, up to `timeoutMs`; then fails naming `what`. */
export async function until<T>(
  what: string,
  fn: () => Promise<T | undefined>,
  timeoutMs = 20_000,
): Promise<T> {
  const end = Date.now() + timeoutMs;
  let last: unknown;
  while (Date.now() < end) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (e) {
      last = e;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`timed out waiting for ${what}${last ? `: ${last}` : ""}`);
}
