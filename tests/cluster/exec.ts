// Small process helpers shared by the cluster scripts and tests (running a command: tests/lib/exec.ts).

export { exec, must, type RunResult } from "../lib/exec.ts";

export async function exists(path: string): Promise<boolean> {
  try {
    await Deno.lstat(path);
    return true;
  } catch {
    return false;
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** Polls `check` until it returns true or `timeoutMs` passes. */
export async function waitFor(
  check: () => Promise<boolean>,
  timeoutMs: number,
  intervalMs = 500,
): Promise<boolean> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      if (await check()) return true;
    } catch { /* not yet */ }
    if (Date.now() >= end) return false;
    await sleep(intervalMs);
  }
}
