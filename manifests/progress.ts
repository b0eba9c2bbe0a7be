/**
 * The progress display of deploy and undeploy: one line per finished step (with its duration), and
 * while a step waits, a status line that is redrawn on a terminal and printed only when it changes
 * otherwise (CI logs stay short).
 */

export interface ProgressSink {
  write(text: string): void;
  isTerminal: boolean;
}

export const stdoutSink: ProgressSink = {
  write: (t) => void Deno.stdout.writeSync(new TextEncoder().encode(t)),
  isTerminal: Deno.stdout.isTerminal(),
};

export class Progress {
  #status = "";
  #stepStart = Date.now();
  readonly lines: string[] = [];

  constructor(readonly sink: ProgressSink = stdoutSink, readonly now: () => number = Date.now) {
    this.#stepStart = now();
  }

  /** Starts timing a step. */
  begin(): void {
    this.#stepStart = this.now();
  }

  #clear(): void {
    if (this.#status && this.sink.isTerminal) this.sink.write("\r\x1b[K");
    this.#status = "";
  }

  /** A finished step: `✓ what  detail  (1.2s)`. */
  done(what: string, detail: string, ok = true): void {
    this.#clear();
    const secs = ((this.now() - this.#stepStart) / 1000).toFixed(1);
    const line = `${ok ? "✓" : "✗"} ${what.padEnd(22)} ${detail}  (${secs}s)`;
    this.lines.push(line);
    this.sink.write(line + "\n");
    this.begin();
  }

  /** A plain line (notes, warnings). */
  note(text: string): void {
    this.#clear();
    this.lines.push(text);
    this.sink.write(text + "\n");
  }

  /** The waiting status of the current step. */
  status(text: string): void {
    if (text === this.#status) return;
    const secs = ((this.now() - this.#stepStart) / 1000).toFixed(0);
    if (this.sink.isTerminal) this.sink.write(`\r\x1b[K… ${text} (${secs}s)`);
    else this.sink.write(`… ${text} (${secs}s)\n`);
    this.#status = text;
  }
}
