// Small process helpers shared by the cluster scripts and tests.

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** Runs a command to completion and returns its output; never throws on a non-zero exit. */
export async function exec(
  cmd: string,
  args: string[],
  opts: { stdin?: string; env?: Record<string, string>; cwd?: string } = {},
): Promise<RunResult> {
  const child = new Deno.Command(cmd, {
    args,
    stdin: opts.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
    env: opts.env,
    cwd: opts.cwd,
  }).spawn();
  if (opts.stdin !== undefined) {
    const w = child.stdin.getWriter();
    await w.write(new TextEncoder().encode(opts.stdin));
    await w.close();
  }
  const out = await child.output();
  const dec = new TextDecoder();
  return { code: out.code, stdout: dec.decode(out.stdout), stderr: dec.decode(out.stderr) };
}

/** Runs a command and throws with its stderr when it fails. */
export async function must(
  cmd: string,
  args: string[],
  opts: { stdin?: string; env?: Record<string, string>; cwd?: string } = {},
): Promise<string> {
  const r = await exec(cmd, args, opts);
  if (r.code !== 0) {
    throw new Error(`${cmd} ${args.join(" ")} exited ${r.code}: ${(r.stderr || r.stdout).trim()}`);
  }
  return r.stdout;
}

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
