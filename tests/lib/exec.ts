/** Running a command to completion, shared by the cluster harness and the end-to-end tests. */

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface ExecOptions {
  stdin?: string;
  env?: Record<string, string>;
  cwd?: string;
  /** Kills the command when it aborts (e.g. `AbortSignal.timeout`). */
  signal?: AbortSignal;
}

/** Runs a command to completion and returns its output; never throws on a non-zero exit. */
export async function exec(cmd: string, args: string[], opts: ExecOptions = {}): Promise<RunResult> {
  const child = new Deno.Command(cmd, {
    args,
    stdin: opts.stdin === undefined ? "null" : "piped",
    stdout: "piped",
    stderr: "piped",
    env: opts.env,
    cwd: opts.cwd,
    signal: opts.signal,
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
export async function must(cmd: string, args: string[], opts: ExecOptions = {}): Promise<string> {
  const r = await exec(cmd, args, opts);
  if (r.code !== 0) {
    throw new Error(`${cmd} ${args.join(" ")} exited ${r.code}: ${(r.stderr || r.stdout).trim()}`);
  }
  return r.stdout;
}
