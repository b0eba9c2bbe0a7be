/** The proxy's log lines: one line each on stderr, `level component: message`. */
export type Level = "debug" | "info" | "warn" | "error";
export type Log = (level: Level, message: string) => void;

const ORDER: Record<Level, number> = { debug: 0, info: 1, warn: 2, error: 3 };

/** Reads a LINKERD2_PROXY_LOG-style spec loosely: the lowest level word it contains wins. */
export function makeLog(
  spec: string | undefined,
  write: (line: string) => void = (l) => console.error(l),
): Log {
  const words = (spec ?? "warn,linkerd=info").toLowerCase();
  let min: Level = "warn";
  for (const l of ["debug", "info", "warn", "error"] as const) {
    if (words.includes(l)) {
      if (ORDER[l] < ORDER[min]) min = l;
    }
  }
  return (level, message) => {
    if (ORDER[level] >= ORDER[min]) {
      write(`${new Date().toISOString()} ${level.toUpperCase()} proxy: ${message}`);
    }
  };
}
