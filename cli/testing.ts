/** A CliContext that records what a command writes, for unit tests of commands. */
import type { CliContext } from "./context.ts";

export interface RecordedContext extends CliContext {
  stdout: string[];
  stderr: string[];
  abort(): void;
}

export function recordingContext(opts: Partial<CliContext> = {}): RecordedContext {
  const stdout: string[] = [];
  const stderr: string[] = [];
  const ac = new AbortController();
  return {
    env: {},
    out: (t) => {
      stdout.push(t);
      return Promise.resolve();
    },
    err: (l) => void stderr.push(l),
    status: () => {},
    stdoutIsTty: false,
    stderrIsTty: false,
    signal: ac.signal,
    readStdin: () => Promise.resolve(""),
    readFile: (p) => Deno.readTextFile(p),
    ...opts,
    stdout,
    stderr,
    abort: () => ac.abort(),
  };
}
