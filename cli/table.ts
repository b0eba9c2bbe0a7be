/**
 * Tables for people: columns aligned with three spaces between them (as kubectl and linkerd print),
 * colour only when asked (stdout a terminal and NO_COLOR unset), and the number formats of
 * `linkerd viz stat` (`100.00%`, `1.5rps`, `3ms`, `-` for no data).
 */

export type Tone = "good" | "warn" | "bad" | "dim" | undefined;

export interface Cell {
  text: string;
  tone?: Tone;
}

const CODES: Record<Exclude<Tone, undefined>, string> = {
  good: "\x1b[32m",
  warn: "\x1b[33m",
  bad: "\x1b[31m",
  dim: "\x1b[2m",
};

export function renderTable(
  headers: readonly string[],
  rows: readonly (readonly (string | Cell)[])[],
  color = false,
): string {
  const cells = rows.map((r) => r.map((c) => typeof c === "string" ? { text: c } : c));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => width(r[i]?.text ?? ""))));
  const line = (r: readonly Cell[]) =>
    r.map((c, i) => {
      const pad = i === r.length - 1 ? "" : " ".repeat(widths[i] - width(c.text) + 3);
      return (color && c.tone ? `${CODES[c.tone]}${c.text}\x1b[0m` : c.text) + pad;
    }).join("");
  const head = line(headers.map((h) => ({ text: h })));
  return [color ? `\x1b[1m${head}\x1b[0m` : head, ...cells.map(line)].join("\n") + "\n";
}

/** Display width: code points (the tables hold ASCII, √ and →). */
function width(s: string): number {
  return [...s].length;
}

export const NO_DATA = "-";

export function fmtSuccess(rate: number | undefined): Cell {
  if (rate === undefined || Number.isNaN(rate)) return { text: NO_DATA };
  const tone: Tone = rate >= 0.99 ? "good" : rate >= 0.95 ? "warn" : "bad";
  return { text: `${(rate * 100).toFixed(2)}%`, tone };
}

export function fmtRps(rps: number | undefined): string {
  if (rps === undefined || Number.isNaN(rps)) return NO_DATA;
  return `${rps.toFixed(1)}rps`;
}

export function fmtLatency(ms: number | undefined): string {
  if (ms === undefined || !Number.isFinite(ms)) return NO_DATA;
  return ms < 10 ? `${Math.round(ms * 10) / 10}ms` : `${Math.round(ms)}ms`;
}

export function fmtCount(n: number | undefined): string {
  return n === undefined || Number.isNaN(n) ? NO_DATA : String(Math.round(n));
}

export function fmtBytesRate(bps: number | undefined): string {
  if (bps === undefined || Number.isNaN(bps)) return NO_DATA;
  if (bps >= 1024 * 1024) return `${(bps / 1024 / 1024).toFixed(1)}MiB/s`;
  if (bps >= 1024) return `${(bps / 1024).toFixed(1)}KiB/s`;
  return `${bps.toFixed(1)}B/s`;
}

/** Whether to colour: a terminal, and the user did not ask for none (https://no-color.org). */
export function useColor(isTty: boolean, env: Record<string, string | undefined>): boolean {
  return isTty && !env.NO_COLOR && env.TERM !== "dumb";
}
