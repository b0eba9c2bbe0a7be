/** Bounded polling: wait on a condition with a deadline, and say what was last seen when it never held. */

/** Thrown by a check when the condition can no longer become true (e.g. the Job failed): stops the wait. */
export class WaitAborted extends Error {
  override name = "WaitAborted";
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

export interface WaitOptions {
  timeoutMs?: number;
  intervalMs?: number;
  /** What the world looked like at the last check, for the failure message. */
  describe?: () => string | Promise<string>;
}

/**
 * Polls `check` until it returns true; throws `timed out after N s waiting for <what>` (with the last error and
 * `describe()`) when the deadline passes. Errors thrown by `check` count as "not yet", except WaitAborted, which
 * ends the wait at once.
 */
export async function waitFor(
  what: string,
  check: () => Promise<boolean> | boolean,
  opts: WaitOptions = {},
): Promise<void> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  const intervalMs = opts.intervalMs ?? 500;
  const end = Date.now() + timeoutMs;
  let lastError = "";
  for (;;) {
    try {
      if (await check()) return;
      lastError = "";
    } catch (e) {
      if (e instanceof WaitAborted) throw new Error(`while waiting for ${what}: ${e.message}`);
      lastError = (e as Error).message;
    }
    if (Date.now() >= end) break;
    await sleep(intervalMs);
  }
  let seen = "";
  try {
    seen = opts.describe ? await opts.describe() : "";
  } catch (e) {
    seen = `(describe failed: ${(e as Error).message})`;
  }
  throw new Error(
    `timed out after ${(timeoutMs / 1000).toFixed(0)} s waiting for ${what}` +
      (lastError ? `; last error: ${lastError}` : "") + (seen ? `; last seen: ${seen}` : ""),
  );
}

/** Like waitFor, but the check returns a value (undefined = not yet), which is returned. */
export async function waitForValue<T>(
  what: string,
  check: () => Promise<T | undefined>,
  opts: WaitOptions = {},
): Promise<T> {
  let value: T | undefined;
  await waitFor(what, async () => (value = await check()) !== undefined, opts);
  return value as T;
}
