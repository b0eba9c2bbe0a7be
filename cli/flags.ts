/**
 * The flag syntax of the `weft` view commands, as kubectl and linkerd users type it: `-n ns`, `-n=ns`,
 * `--namespace ns`, `--namespace=ns`, boolean `-A` / `--all-namespaces`; anything else is a positional.
 */
import { UsageError } from "./context.ts";

export interface FlagSpec {
  name: string;
  short?: string;
  /** A boolean flag takes no value. */
  bool?: boolean;
  /** Shown in the help text. */
  help: string;
  /** Shown in the help text as the default. */
  default?: string;
}

export interface ParsedFlags {
  values: Map<string, string>;
  bools: Set<string>;
  positionals: string[];
  help: boolean;
}

export function parseFlags(args: readonly string[], specs: readonly FlagSpec[]): ParsedFlags {
  const out: ParsedFlags = { values: new Map(), bools: new Set(), positionals: [], help: false };
  const byLong = new Map(specs.map((s) => [s.name, s]));
  const byShort = new Map(specs.filter((s) => s.short).map((s) => [s.short!, s]));
  for (let i = 0; i < args.length; i++) {
    const a = args[i];
    if (a === "--help" || a === "-h") {
      out.help = true;
      continue;
    }
    const m = /^(--?)([A-Za-z][A-Za-z0-9-]*)(?:=(.*))?$/s.exec(a);
    if (!m) {
      out.positionals.push(a);
      continue;
    }
    const spec = m[1] === "--" ? byLong.get(m[2]) : byShort.get(m[2]);
    if (!spec) throw new UsageError(`unknown flag ${m[1]}${m[2]}`);
    if (spec.bool) {
      if (m[3] !== undefined && m[3] !== "true" && m[3] !== "false") {
        throw new UsageError(`--${spec.name} takes no value (or true|false), got "${m[3]}"`);
      }
      if (m[3] === "false") out.bools.delete(spec.name);
      else out.bools.add(spec.name);
      continue;
    }
    let v = m[3];
    if (v === undefined) {
      v = args[++i];
      if (v === undefined) throw new UsageError(`${m[1]}${m[2]} needs a value`);
    }
    out.values.set(spec.name, v);
  }
  return out;
}

export function flagHelp(specs: readonly FlagSpec[]): string {
  const left = specs.map((s) =>
    `${s.short ? `-${s.short}, ` : "    "}--${s.name}${
      s.bool ? "" : ` ${s.name.toUpperCase().replace(/-/g, "_")}`
    }`
  );
  const w = Math.max(...left.map((l) => l.length));
  return specs.map((s, i) =>
    `  ${left[i].padEnd(w)}  ${s.help}${s.default !== undefined ? ` (default ${s.default})` : ""}`
  ).join("\n");
}

/** Parses a Prometheus-style duration (`30s`, `1m`, `1h30m`, `2d`) into seconds; refuses anything else. */
export function parseWindow(text: string, flag: string): number {
  const m = /^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$/.exec(text);
  if (!m || text === "") throw new UsageError(`${flag}: "${text}" is not a duration like 30s, 1m, 1h or 2d`);
  const s = Number(m[1] ?? 0) * 86400 + Number(m[2] ?? 0) * 3600 + Number(m[3] ?? 0) * 60 + Number(m[4] ?? 0);
  if (s <= 0) throw new UsageError(`${flag}: "${text}" must be longer than 0s`);
  return s;
}

/** The shortest Prometheus duration text for a number of seconds (`90` → `1m30s`). */
export function windowText(seconds: number): string {
  let s = Math.round(seconds);
  let out = "";
  for (const [unit, n] of [["d", 86400], ["h", 3600], ["m", 60], ["s", 1]] as const) {
    if (s >= n) {
      out += `${Math.floor(s / n)}${unit}`;
      s %= n;
    }
  }
  return out || "0s";
}

export type OutputFormat = "table" | "json" | "wide";

export function parseOutput(v: string | undefined): OutputFormat {
  const o = v ?? "table";
  if (o !== "table" && o !== "json" && o !== "wide") {
    throw new UsageError(`-o: "${o}" is not table, wide or json`);
  }
  return o;
}
