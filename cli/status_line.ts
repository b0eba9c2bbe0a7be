/**
 * stderr for people: notes and errors as lines, and one progress line redrawn in place (`\r` + erase) while a
 * long wait is out. The progress line is drawn only on a terminal that understands the erase (stderr a TTY,
 * TERM not `dumb`): in a pipe or a log file it would be noise. A note first erases a drawn progress line,
 * so the two never share a line.
 */

export interface StatusLine {
  /** Redraws the progress line (empty text clears it). */
  status(text: string): void;
  /** Writes one line. */
  err(line: string): void;
}

/** `write` is stderr's; `isTty` whether stderr is a terminal; `env` for TERM. */
export function statusLine(
  write: (text: string) => void,
  isTty: boolean,
  env: Record<string, string | undefined>,
): StatusLine {
  const draws = isTty && env.TERM !== "dumb";
  let shown = false;
  return {
    status(text) {
      if (!draws) return;
      if (text === "" && !shown) return;
      write(`\r\x1b[K${text}`);
      shown = text !== "";
    },
    err(line) {
      if (shown) write("\r\x1b[K");
      shown = false;
      write(line + "\n");
    },
  };
}
