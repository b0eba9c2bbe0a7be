/**
 * The command-line flags of the control-plane components (`control/main.ts <component>`, the certs
 * and inject tools): `--name=value`, bare `--name` for switches, and positional arguments where a
 * tool takes them. Each component declares its flags; an unknown flag, a switch given a value it
 * cannot mean, a value-less flag or two spellings of one flag are refused with a message naming
 * the flag. Pure: main.ts passes in the arguments and the environment.
 *
 * Names follow Linkerd's controllers (`--addr`, `--admin-addr`, `--controller-namespace`,
 * `--identity-trust-domain`, `--cluster-domain`, `--kubeconfig`); older weft spellings and the
 * spellings of Linkerd's policy controller are aliases (COMMON_ALIASES).
 */

export class FlagError extends Error {
  override name = "FlagError";
}

export interface FlagSpec {
  /** The canonical name, without dashes. */
  name: string;
  /** Other accepted spellings of the same flag. */
  aliases?: readonly string[];
  /** Read when the flag is absent. */
  env?: string;
  /** May be given more than once; every value is kept. */
  repeatable?: boolean;
  /** A switch: bare `--name` means true; a value must be true or false. */
  switch?: boolean;
}

/** Spellings that drifted between components (and Linkerd's policy controller), per canonical name. */
export const COMMON_ALIASES: Readonly<Record<string, readonly string[]>> = {
  "controller-namespace": ["control-plane-namespace"],
  "identity-trust-domain": ["trust-domain", "identity-domain"],
};

/** Shorthand for a spec with the common aliases of its name. */
export function flag(name: string, extra: Omit<FlagSpec, "name"> = {}): FlagSpec {
  const aliases = [...(COMMON_ALIASES[name] ?? []), ...(extra.aliases ?? [])];
  return { ...extra, name, ...(aliases.length ? { aliases } : {}) };
}

export class Flags {
  readonly #values: Map<string, string[]>;
  readonly #spelled: Map<string, string>;
  readonly #specs: Map<string, FlagSpec>;
  readonly #env: Record<string, string | undefined>;

  constructor(
    values: Map<string, string[]>,
    spelled: Map<string, string>,
    specs: Map<string, FlagSpec>,
    env: Record<string, string | undefined>,
  ) {
    this.#values = values;
    this.#spelled = spelled;
    this.#specs = specs;
    this.#env = env;
  }

  #spec(name: string): FlagSpec {
    const s = this.#specs.get(name);
    if (!s) throw new Error(`flag --${name} is not declared`); // a programming error, not input
    return s;
  }

  /** The flag's value, else its environment variable's (an empty variable counts as unset). */
  get(name: string): string | undefined {
    const spec = this.#spec(name);
    const v = this.#values.get(name);
    if (v) return v[v.length - 1];
    return spec.env ? this.#env[spec.env] || undefined : undefined;
  }

  /** Every value of a repeatable flag, in order. */
  all(name: string): string[] {
    this.#spec(name);
    return [...(this.#values.get(name) ?? [])];
  }

  /** A switch's value: true, false, or `dflt` when absent. */
  switch(name: string, dflt = false): boolean {
    const v = this.get(name);
    return v === undefined ? dflt : v === "true";
  }

  has(name: string): boolean {
    return this.#values.has(name);
  }

  /** `--spelling` as the user wrote it (an alias, or the canonical name), for messages. */
  label(name: string): string {
    return `--${this.#spelled.get(name) ?? name}`;
  }
}

export interface ParseOptions {
  env?: Record<string, string | undefined>;
  /** Accept arguments that are not flags (returned as `positional`); refused otherwise. */
  positional?: boolean;
  /** Appended to every error message (a usage text). */
  usage?: string;
}

/** Levenshtein distance, for "did you mean" hints. */
export function editDistance(a: string, b: string): number {
  const d = Array.from({ length: a.length + 1 }, (_, i) => [i, ...new Array(b.length).fill(0)]);
  for (let j = 1; j <= b.length; j++) d[0][j] = j;
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] === b[j - 1] ? 0 : 1));
    }
  }
  return d[a.length][b.length];
}

export function parseFlags(
  args: readonly string[],
  specs: readonly FlagSpec[],
  opts: ParseOptions = {},
): { flags: Flags; positional: string[] } {
  const fail = (message: string): never => {
    throw new FlagError(opts.usage ? `${message}\n${opts.usage}` : message);
  };
  const byName = new Map<string, FlagSpec>();
  const bySpelling = new Map<string, FlagSpec>();
  for (const s of specs) {
    byName.set(s.name, s);
    for (const n of [s.name, ...(s.aliases ?? [])]) bySpelling.set(n, s);
  }
  const values = new Map<string, string[]>();
  const spelled = new Map<string, string>();
  const positional: string[] = [];
  for (const a of args) {
    if (!a.startsWith("--")) {
      if (!opts.positional) fail(`unexpected argument ${JSON.stringify(a)}; flags look like --name=value`);
      positional.push(a);
      continue;
    }
    const m = /^--([a-z0-9][a-z0-9-]*)(=([\s\S]*))?$/.exec(a);
    if (!m) fail(`argument ${JSON.stringify(a)} is not --name=value`);
    const [, given, hasValue, raw] = m!;
    const spec = bySpelling.get(given);
    if (!spec) {
      const near = [...bySpelling.keys()].filter((k) => editDistance(k, given) <= 2 || k.includes(given));
      const hint = near.length ? `; did you mean ${near.map((k) => `--${k}`).join(" or ")}?` : "";
      fail(`unknown flag --${given}${hint} (known: ${specs.map((s) => `--${s.name}`).join(" ")})`);
    }
    let value = raw;
    if (spec!.switch) {
      if (!hasValue) value = "true";
      else if (value !== "true" && value !== "false") fail(`--${given}: "${value}" is not true or false`);
    } else if (!hasValue) fail(`--${given} needs a value (--${given}=VALUE)`);
    const name = spec!.name;
    const before = spelled.get(name);
    if (before !== undefined && before !== given) {
      fail(`--${before} and --${given} are the same flag; give it once`);
    }
    if (before !== undefined && !spec!.repeatable && values.get(name)![0] !== value) {
      fail(`--${given} is given twice with different values`);
    }
    spelled.set(name, given);
    values.set(name, spec!.repeatable ? [...(values.get(name) ?? []), value!] : [value!]);
  }
  return { flags: new Flags(values, spelled, byName, opts.env ?? {}), positional };
}
