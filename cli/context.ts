/**
 * What every `weft` subcommand gets from cli/main.ts (the only reader of the environment): its
 * arguments, the environment as a plain record, the output streams, whether they are terminals, and a
 * signal aborted on Ctrl-C so long-running commands end cleanly.
 */
export interface CliContext {
  env: Record<string, string | undefined>;
  /** Writes text to stdout as is (no newline added). */
  out(text: string): Promise<void>;
  /** Writes one line to stderr (progress, notes, errors). */
  err(line: string): void;
  /** Redraws a status line on stderr when it is a terminal (empty text clears it). */
  status(text: string): void;
  stdoutIsTty: boolean;
  stderrIsTty: boolean;
  /** Aborted on SIGINT (or by a test). */
  signal: AbortSignal;
  readStdin(): Promise<string>;
  readFile(path: string): Promise<string>;
}

/** A subcommand: `run` returns the exit status (0 ok, 1 failed, 2 bad usage). */
export interface Command {
  name: string;
  /** Other names that reach the same command (e.g. `mesh:check` for `check`). */
  aliases?: string[];
  /** One line for `weft help`. */
  summary: string;
  run(args: string[], ctx: CliContext): Promise<number>;
}

/** Thrown for bad flags; the dispatcher prints it with the command's help and exits 2. */
export class UsageError extends Error {
  override name = "UsageError";
}
