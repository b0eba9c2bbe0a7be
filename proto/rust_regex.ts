/**
 * Rust `regex` crate syntax (the dialect Linkerd's proxy evaluates route and ServiceProfile regexes with,
 * close to RE2) translated into an equivalent JavaScript RegExp, or refused with an error naming what is
 * wrong and where. Shared by the control plane (admission, route conversion) and the proxy (matching), so
 * both sides accept and evaluate exactly the same patterns.
 *
 * The output is compiled with the `v` (unicodeSets) flag, chosen deliberately:
 * - Rust character classes nest and have set operators (`[a-z&&[^aeiou]]`, `--`, `~~`); `v` expresses
 *   nesting, intersection and subtraction directly, where `u` would need a hand-computed set.
 * - like `u`, it works on code points and knows `\p{...}`; and it fixes `u`'s case-insensitive handling of
 *   negated classes, which matters because Rust's `(?i)` applies to classes too.
 * - its stricter class syntax costs nothing: every character is emitted escaped (`\u{..}`).
 * Flags are never passed to the JS engine as RegExp flags: each construct is emitted for the flags in
 * force where it appears (`.` for `s`, `^`/`$` for `m`, greediness for `U`, ...), and case-insensitive
 * atoms are wrapped in `(?i:...)` modifier groups, so Rust's scoped flags (`a(?i)b|c`) keep their scope.
 *
 * Semantics followed (Rust regex 1.10+ defaults): Unicode mode on (`\d` = `\p{Nd}`, `\s` = `\p{White_Space}`,
 * `\w` and `\b` on Unicode word characters); `.` excludes only `\n`; `$` is the end of the text (`\z`),
 * not "before a final newline". Leftmost-first match preference is the same as a backtracking engine's.
 * Refused, as Rust refuses them: backreferences, look-around, atomic groups, `\Q...\E`, `{,n}`, unknown
 * escapes of letters/digits, constructs that could match invalid UTF-8 under `(?-u)`.
 * Weft's own limits: counted repetition above 100 000 and programs above 100 000 instructions (Rust bounds
 * the compiled size instead); Unicode
 * properties JavaScript lacks (Age, Grapheme_Cluster_Break, Word_Break, Sentence_Break).
 * Match time: Rust regex is linear-time, V8 backtracks (exponential on `(a+)+b` and crafted input), so the
 * matchers used on request values (WholeValueRegex, SearchRegex) run the parsed pattern on a Pike VM
 * (proto/rust_regex_vm.ts); the translated RegExp is used to test single characters and assertions only.
 */
import { BINARY_PROPERTIES, GENERAL_CATEGORIES, SCRIPTS } from "./rust_regex_names.ts";
import { type Node, Program, ProgramTooLarge } from "./rust_regex_vm.ts";

/** A pattern Rust regex (and so weft) refuses; `offset` counts characters (code points) from 0. */
export class RustRegexError extends Error {
  constructor(readonly offset: number, readonly reason: string) {
    super(`${reason} (at character ${offset + 1})`);
    this.name = "RustRegexError";
  }
}

/** Rust's default nesting limit for groups and classes. */
const NEST_LIMIT = 250;
/** Weft's bound on `{n,m}` counts; Rust has no fixed bound but a compiled-size limit. */
export const MAX_REPEAT = 100_000;

type Flags = { i: boolean; m: boolean; s: boolean; U: boolean; u: boolean; x: boolean; R: boolean };
const DEFAULT_FLAGS: Flags = { i: false, m: false, s: false, U: false, u: true, x: false, R: false };

/** An emitted piece; `atom` when a JS quantifier may follow it directly; `node` for the linear-time matcher. */
type Item = { src: string; atom: boolean; node: Node };
/** A translated (sub)pattern: JS source and the same structure as a tree. */
type Piece = { src: string; node: Node };

/** One code point matched by `src` (a literal, class, dot or class escape). */
const charItem = (src: string): Item => ({ src, atom: true, node: { t: "char", src } });
const assertItem = (src: string): Item => ({ src, atom: false, node: { t: "assert", src } });

/** Class contents (inside `[...]`) for the Perl classes. */
const UNICODE_WORD = "\\p{Alphabetic}\\p{M}\\p{Nd}\\p{Pc}\\p{Join_Control}";
const ASCII_WORD = "0-9A-Za-z\\u{5f}";
const UNICODE_DIGIT = "\\p{Nd}";
const ASCII_DIGIT = "0-9";
const UNICODE_SPACE = "\\p{White_Space}";
const ASCII_SPACE = "\\u{9}-\\u{d}\\u{20}";

/** POSIX ASCII classes, valid only inside a bracket class as `[[:name:]]`. */
const POSIX: Readonly<Record<string, string>> = {
  alnum: "0-9A-Za-z",
  alpha: "A-Za-z",
  ascii: "\\u{0}-\\u{7f}",
  blank: "\\u{9}\\u{20}",
  cntrl: "\\u{0}-\\u{1f}\\u{7f}",
  digit: "0-9",
  graph: "\\u{21}-\\u{7e}",
  lower: "a-z",
  print: "\\u{20}-\\u{7e}",
  punct: "\\u{21}-\\u{2f}\\u{3a}-\\u{40}\\u{5b}-\\u{60}\\u{7b}-\\u{7e}",
  space: ASCII_SPACE,
  upper: "A-Z",
  word: ASCII_WORD,
  xdigit: "0-9A-Fa-f",
};

/** One code point as JS source, safe both outside and inside a `v`-mode class. */
function emitChar(cp: number): string {
  const c = String.fromCodePoint(cp);
  return /^[0-9A-Za-z]$/.test(c) ? c : `\\u{${cp.toString(16)}}`;
}

const isHex = (c: string | undefined) => c !== undefined && /^[0-9A-Fa-f]$/.test(c);
const isDigit = (c: string | undefined) => c !== undefined && c >= "0" && c <= "9";
const isSpace = (c: string | undefined) => c !== undefined && /^\p{White_Space}$/u.test(c);
const CASED = /^[\p{Changes_When_Casemapped}\p{Changes_When_Casefolded}]$/u;
const loose = (s: string) => s.toLowerCase().replace(/[\s_-]/g, "");

/** What an escape stands for. */
type Escape =
  | { kind: "char"; cp: number }
  | { kind: "class"; contents: string; negated: boolean }
  | { kind: "assert"; src: string };

class Translator {
  readonly cs: string[];
  pos = 0;
  readonly names = new Set<string>();

  constructor(pattern: string) {
    this.cs = Array.from(pattern);
  }

  fail(reason: string, at = this.pos): never {
    throw new RustRegexError(at, reason);
  }

  peek(k = 0): string | undefined {
    return this.cs[this.pos + k];
  }

  startsWith(s: string): boolean {
    const want = Array.from(s);
    return want.every((c, k) => this.cs[this.pos + k] === c);
  }

  /** In `x` mode: whitespace and `#` comments are not part of the pattern. */
  skipTrivia(f: Flags): void {
    if (!f.x) return;
    for (;;) {
      const c = this.peek();
      if (isSpace(c)) this.pos++;
      else if (c === "#") {
        while (this.pos < this.cs.length && this.peek() !== "\n") this.pos++;
      } else return;
    }
  }

  translate(): Piece {
    const piece = this.alternation({ ...DEFAULT_FLAGS }, 0);
    if (this.pos < this.cs.length) this.fail("unopened group: ')' without a matching '('");
    return piece;
  }

  /** A sequence of alternatives up to an unconsumed `)` or the end; flags set inline last to the end. */
  alternation(outer: Flags, depth: number): Piece {
    const f = { ...outer };
    const alts: string[] = [];
    const altNodes: Node[] = [];
    let seq: Item[] = [];
    let last: Item | undefined;
    for (;;) {
      this.skipTrivia(f);
      const c = this.peek();
      if (c === undefined || c === ")") break;
      const at = this.pos;
      if (c === "|") {
        this.pos++;
        alts.push(seq.map((x) => x.src).join(""));
        altNodes.push({ t: "cat", items: seq.map((x) => x.node) });
        seq = [];
        last = undefined;
        continue;
      }
      if (c === "*" || c === "+" || c === "?" || c === "{") {
        if (!last) this.fail("repetition operator missing expression");
        const q = this.quantifier(f);
        const base = last.atom ? last.src : `(?:${last.src})`;
        last = {
          src: base + q.text,
          atom: false,
          node: { t: "rep", node: last.node, min: q.min, max: q.max, greedy: q.greedy },
        };
        seq[seq.length - 1] = last;
        continue;
      }
      let item: Item | undefined;
      if (c === "(") {
        const g = this.group(f, depth + 1);
        if ("flags" in g) {
          Object.assign(f, g.flags);
          last = undefined;
          continue;
        }
        item = g;
      } else if (c === "[") {
        item = charItem(this.bracketClass(f, depth + 1));
      } else if (c === "\\") {
        item = this.escapeItem(this.escape(f, false), f);
      } else if (c === ".") {
        this.pos++;
        if (!f.u) this.fail("'.' with Unicode mode off (?-u) can match invalid UTF-8", at);
        item = charItem(f.s ? "[\\u{0}-\\u{10ffff}]" : f.R ? "[^\\u{a}\\u{d}]" : "[^\\u{a}]");
      } else if (c === "^") {
        this.pos++;
        item = assertItem(
          !f.m ? "^" : f.R ? "(?:^|(?<=\\u{a})|(?<=\\u{d})(?!\\u{a}))" : "(?:^|(?<=\\u{a}))",
        );
      } else if (c === "$") {
        this.pos++;
        item = assertItem(
          !f.m ? "$" : f.R ? "(?:$|(?=\\u{d})|(?<!\\u{d})(?=\\u{a}))" : "(?:$|(?=\\u{a}))",
        );
      } else {
        this.pos++;
        item = this.literal(c.codePointAt(0)!, f);
      }
      seq.push(item);
      last = item;
    }
    alts.push(seq.map((x) => x.src).join(""));
    altNodes.push({ t: "cat", items: seq.map((x) => x.node) });
    return { src: alts.join("|"), node: altNodes.length === 1 ? altNodes[0] : { t: "alt", alts: altNodes } };
  }

  literal(cp: number, f: Flags): Item {
    if (!f.i) return charItem(emitChar(cp));
    if (!f.u) {
      // ASCII-only case folding: a letter and its other case, nothing else.
      const c = String.fromCodePoint(cp);
      if (/^[A-Za-z]$/.test(c)) return charItem(`[${c.toLowerCase()}${c.toUpperCase()}]`);
      return charItem(emitChar(cp));
    }
    // Only characters with other cases need the modifier group.
    const c = String.fromCodePoint(cp);
    return charItem(CASED.test(c) ? `(?i:${emitChar(cp)})` : emitChar(cp));
  }

  escapeItem(e: Escape, f: Flags): Item {
    if (e.kind === "char") return this.literal(e.cp, f);
    if (e.kind === "assert") return assertItem(e.src);
    const cls = `[${e.negated ? "^" : ""}${e.contents}]`;
    return charItem(f.i ? `(?i:${cls})` : cls);
  }

  /** `*`, `+`, `?` or `{n}`, `{n,}`, `{n,m}`, then an optional `?`; greediness flipped by `U`. */
  quantifier(f: Flags): { text: string; min: number; max: number | undefined; greedy: boolean } {
    const at = this.pos;
    let q: string;
    let min: number, max: number | undefined;
    const c = this.peek()!;
    this.pos++;
    if (c !== "{") {
      q = c;
      [min, max] = c === "*" ? [0, undefined] : c === "+" ? [1, undefined] : [0, 1];
    } else {
      this.skipTrivia(f);
      min = this.decimal(at);
      this.skipTrivia(f);
      max = min;
      if (this.peek() === ",") {
        this.pos++;
        this.skipTrivia(f);
        max = isDigit(this.peek()) ? this.decimal(at) : undefined;
        this.skipTrivia(f);
      }
      if (this.peek() !== "}") this.fail("unclosed counted repetition", at);
      this.pos++;
      if (max !== undefined && min > max) {
        this.fail(`invalid repetition range {${min},${max}}: start > end`, at);
      }
      if (min > MAX_REPEAT || (max ?? 0) > MAX_REPEAT) {
        this.fail(`repetition count above ${MAX_REPEAT} (weft's limit)`, at);
      }
      q = max === min ? `{${min}}` : max === undefined ? `{${min},}` : `{${min},${max}}`;
    }
    this.skipTrivia(f);
    let lazy = false;
    if (this.peek() === "?") {
      this.pos++;
      lazy = true;
    }
    const greedy = lazy === f.U;
    return { text: greedy ? q : `${q}?`, min, max, greedy };
  }

  decimal(at: number): number {
    const start = this.pos;
    while (isDigit(this.peek())) this.pos++;
    if (this.pos === start) {
      this.fail("counted repetition expects a decimal count ({n}, {n,} or {n,m}; {,n} is not supported)", at);
    }
    const n = Number(this.cs.slice(start, this.pos).join(""));
    if (n > 0xffffffff) this.fail("repetition count does not fit in 32 bits", start);
    return n;
  }

  /** At `(`: a group (returned as an item) or a flag directive `(?flags)` (returned as the new flags). */
  group(f: Flags, depth: number): Item | { flags: Flags } {
    const at = this.pos;
    if (depth > NEST_LIMIT) this.fail(`nested deeper than ${NEST_LIMIT} levels`);
    this.pos++;
    let inner = f;
    if (this.peek() === "?") {
      this.pos++;
      if (
        this.startsWith("P<") || (this.startsWith("<") && !this.startsWith("<=") && !this.startsWith("<!"))
      ) {
        if (this.peek() === "P") this.pos++;
        this.groupName();
      } else if (
        this.startsWith("=") || this.startsWith("!") || this.startsWith("<=") || this.startsWith("<!")
      ) {
        this.fail("look-around (look-ahead and look-behind) is not supported", at);
      } else if (this.startsWith("P=") || this.startsWith("P>")) {
        this.fail("backreferences and recursion are not supported", at);
      } else if (this.peek() === ">") {
        this.fail("atomic groups (?>...) are not supported", at);
      } else if (this.peek() === "#") {
        this.fail("comment groups (?#...) are not supported; use (?x) and '#' comments", at);
      } else {
        const next = this.flagSet(f, at);
        if (this.peek() === ")") {
          this.pos++;
          return { flags: next };
        }
        this.pos++; // ':'
        inner = next;
      }
    }
    const body = this.alternation(inner, depth);
    if (this.peek() !== ")") this.fail("unclosed group", at);
    this.pos++;
    return { src: `(?:${body.src})`, atom: true, node: body.node };
  }

  /** After `(?P<` or `(?<`: a capture name (captures do not matter for matching, but names must be valid). */
  groupName(): void {
    this.pos++; // '<'
    const start = this.pos;
    while (this.pos < this.cs.length && this.peek() !== ">") {
      const c = this.peek()!;
      const ok = this.pos === start
        ? /^[\p{Alphabetic}_]$/u.test(c)
        : /^[\p{Alphabetic}\p{Nd}\p{M}_.[\]]$/u.test(c);
      if (!ok) this.fail(`invalid character ${JSON.stringify(c)} in capture group name`);
      this.pos++;
    }
    if (this.peek() !== ">") this.fail("unclosed capture group name", start - 1);
    const name = this.cs.slice(start, this.pos).join("");
    if (name === "") this.fail("empty capture group name", start);
    if (this.names.has(name)) this.fail(`duplicate capture group name "${name}"`, start);
    this.names.add(name);
    this.pos++;
  }

  /** `imsUuxR` with an optional `-`, up to `)` or `:` (not consumed). */
  flagSet(f: Flags, at: number): Flags {
    const next = { ...f };
    const seen = new Set<string>();
    let negate = false;
    let negatedAny = false;
    let any = false;
    for (;;) {
      const c = this.peek();
      if (c === undefined) this.fail("unclosed group", at);
      if (c === ")" || c === ":") break;
      if (c === "-") {
        if (negate) this.fail("repeated '-' in flags");
        negate = true;
      } else if ("imsUuxR".includes(c)) {
        if (seen.has(c)) this.fail(`duplicate flag '${c}'`);
        seen.add(c);
        next[c as keyof Flags] = !negate;
        any = true;
        if (negate) negatedAny = true;
      } else {
        this.fail(`unrecognized flag '${c}' (Rust regex has i, m, s, U, u, x, R)`);
      }
      this.pos++;
    }
    if (negate && !negatedAny) this.fail("flag negation '-' without any flag after it");
    if (!any && this.peek() === ")") this.fail("empty flag group (?)", at);
    return next;
  }

  /** At `\`: one escape, outside a class (`inClass` false) or inside one. */
  escape(f: Flags, inClass: boolean): Escape {
    const at = this.pos;
    this.pos++;
    const c = this.peek();
    if (c === undefined) this.fail("incomplete escape sequence at the end of the pattern", at);
    this.pos++;
    const assertion = (src: string): Escape => {
      if (inClass) this.fail(`\\${c} is an assertion and cannot appear in a character class`, at);
      return { kind: "assert", src };
    };
    const word = f.u ? UNICODE_WORD : ASCII_WORD;
    const isW = `[${word}]`;
    switch (c) {
      case "a":
        return { kind: "char", cp: 7 };
      case "f":
        return { kind: "char", cp: 0xc };
      case "t":
        return { kind: "char", cp: 9 };
      case "n":
        return { kind: "char", cp: 0xa };
      case "r":
        return { kind: "char", cp: 0xd };
      case "v":
        return { kind: "char", cp: 0xb };
      case "x":
      case "u":
      case "U":
        return { kind: "char", cp: this.hexEscape(c, f, at) };
      case "d":
      case "D":
        return this.perl(f.u ? UNICODE_DIGIT : ASCII_DIGIT, c === "D", f, at);
      case "s":
      case "S":
        return this.perl(f.u ? UNICODE_SPACE : ASCII_SPACE, c === "S", f, at);
      case "w":
      case "W":
        return this.perl(word, c === "W", f, at);
      case "p":
      case "P":
        return this.property(c === "P", f, at);
      case "A":
        return assertion("^");
      case "z":
        return assertion("$");
      case "b": {
        // `\b{2}` is a counted repetition of `\b`, not a special word boundary.
        if (this.peek() === "{" && !isDigit(this.peek(1)) && !isSpace(this.peek(1))) {
          const close = this.cs.indexOf("}", this.pos);
          const kind = close < 0 ? "" : this.cs.slice(this.pos + 1, close).join("");
          const forms: Record<string, string> = {
            start: `(?<!${isW})(?=${isW})`,
            end: `(?<=${isW})(?!${isW})`,
            "start-half": `(?<!${isW})`,
            "end-half": `(?!${isW})`,
          };
          if (!(kind in forms)) {
            this.fail("\\b{...} must be \\b{start}, \\b{end}, \\b{start-half} or \\b{end-half}", at);
          }
          this.pos = close + 1;
          return assertion(forms[kind]);
        }
        return assertion(`(?:(?<=${isW})(?!${isW})|(?<!${isW})(?=${isW}))`);
      }
      case "B":
        return assertion(`(?:(?<=${isW})(?=${isW})|(?<!${isW})(?!${isW}))`);
      case "<":
        return assertion(`(?<!${isW})(?=${isW})`);
      case ">":
        return assertion(`(?<=${isW})(?!${isW})`);
      case "Q":
      case "E":
        return this.fail(
          "\\Q...\\E literal quoting is not supported by Rust regex; escape each character",
          at,
        );
      case "k":
        return this.fail("backreferences are not supported", at);
    }
    if (isDigit(c)) this.fail("backreferences (and octal escapes) are not supported", at);
    const cp = c.codePointAt(0)!;
    if (cp < 0x80 && !/^[0-9A-Za-z]$/.test(c)) return { kind: "char", cp }; // e.g. \- \/ \. \  \#
    return this.fail(`unrecognized escape sequence \\${c}`, at);
  }

  perl(contents: string, negated: boolean, f: Flags, at: number): Escape {
    if (negated && !f.u) this.fail("a negated class with Unicode mode off (?-u) can match invalid UTF-8", at);
    return { kind: "class", contents, negated };
  }

  /** After `\x`, `\u` or `\U`: fixed-width hex (2, 4, 8 digits) or `{hex}`. */
  hexEscape(c: string, f: Flags, at: number): number {
    let digits = "";
    if (this.peek() === "{") {
      this.pos++;
      while (isHex(this.peek())) digits += this.cs[this.pos++];
      if (this.peek() !== "}") this.fail(`unclosed or invalid \\${c}{...} escape (hex digits expected)`, at);
      this.pos++;
      if (digits === "" || digits.length > 8) this.fail(`\\${c}{...} needs 1 to 8 hex digits`, at);
    } else {
      const width = c === "x" ? 2 : c === "u" ? 4 : 8;
      for (let k = 0; k < width; k++) {
        if (!isHex(this.peek())) this.fail(`\\${c} needs exactly ${width} hex digits or braces`, at);
        digits += this.cs[this.pos++];
      }
    }
    const cp = parseInt(digits, 16);
    if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
      this.fail(`\\${c}: ${digits} is not a Unicode scalar value`, at);
    }
    if (!f.u && cp > 0x7f) {
      this.fail("a non-ASCII hex escape with Unicode mode off (?-u) is a byte that is not UTF-8", at);
    }
    return cp;
  }

  /** After `\p` / `\P`: `\pL` or `\p{name}`, `\p{^name}`, `\p{key=value}`, `\p{key!=value}`, `\p{key:value}`. */
  property(negated: boolean, f: Flags, at: number): Escape {
    if (!f.u) this.fail("Unicode classes \\p are not allowed with Unicode mode off (?-u)", at);
    let body: string;
    if (this.peek() === "{") {
      const close = this.cs.indexOf("}", this.pos);
      if (close < 0) this.fail("unclosed \\p{...}", at);
      body = this.cs.slice(this.pos + 1, close).join("");
      this.pos = close + 1;
    } else {
      const c = this.peek();
      if (c === undefined) this.fail("incomplete \\p escape", at);
      body = c;
      this.pos++;
    }
    body = body.trim();
    if (body.startsWith("^")) {
      negated = !negated;
      body = body.slice(1);
    }
    const m = /^(.*?)(!=|=|:)(.*)$/s.exec(body);
    let prop: string | undefined;
    if (m) {
      if (m[2] === "!=") negated = !negated;
      prop = this.keyedProperty(m[1], m[3], at);
    } else {
      prop = lookupName(body);
    }
    if (prop === undefined) this.fail(`unknown Unicode property or value "${body}"`, at);
    return { kind: "class", contents: `\\${negated ? "P" : "p"}{${prop}}`, negated: false };
  }

  keyedProperty(key: string, value: string, at: number): string | undefined {
    const k = loose(key), v = loose(value);
    switch (k) {
      case "gc":
      case "generalcategory": {
        const g = GENERAL_CATEGORIES[v];
        return g && `General_Category=${g}`;
      }
      case "sc":
      case "script":
        return SCRIPTS[v] && `Script=${SCRIPTS[v]}`;
      case "scx":
      case "scriptextensions":
        return SCRIPTS[v] && `Script_Extensions=${SCRIPTS[v]}`;
      case "age":
      case "gcb":
      case "graphemeclusterbreak":
      case "wb":
      case "wordbreak":
      case "sb":
      case "sentencebreak":
        return this.fail(
          `the Unicode property "${key}" is valid in Rust regex but JavaScript has no equivalent`,
          at,
        );
    }
    return this.fail(`unknown Unicode property "${key}"`, at);
  }

  /** At `[`: a bracket class, emitted as one `v`-mode class (wrapped in `(?i:...)` when `i` is on). */
  bracketClass(f: Flags, depth: number): string {
    const inner = this.classBody(f, depth);
    return f.i ? `(?i:${inner})` : inner;
  }

  classBody(f: Flags, depth: number): string {
    const at = this.pos;
    if (depth > NEST_LIMIT) this.fail(`nested deeper than ${NEST_LIMIT} levels`);
    this.pos++;
    let negated = false;
    if (this.peek() === "^") {
      this.pos++;
      negated = true;
    }
    if (negated && !f.u) this.fail("a negated class with Unicode mode off (?-u) can match invalid UTF-8", at);
    // Rust: operators are left-associative with equal precedence; each operand is a union.
    let acc = `[${this.union(f, depth, true, at)}]`;
    for (;;) {
      this.skipTrivia(f);
      const op = this.classOperator();
      if (!op) break;
      this.pos += 2;
      const rhs = `[${this.union(f, depth, false, at)}]`;
      acc = op === "~~" ? `[[${acc}--${rhs}][${rhs}--${acc}]]` : `[${acc}${op}${rhs}]`;
    }
    if (this.peek() !== "]") this.fail("unclosed character class", at);
    this.pos++;
    return negated ? `[^${acc}]` : acc;
  }

  classOperator(): "&&" | "--" | "~~" | undefined {
    for (const op of ["&&", "--", "~~"] as const) if (this.startsWith(op)) return op;
    return undefined;
  }

  /** Class items up to `]` or a set operator; a `]` first in the class is a literal. */
  union(f: Flags, depth: number, first: boolean, classAt: number): string {
    const parts: string[] = [];
    for (;;) {
      this.skipTrivia(f);
      const c = this.peek();
      if (c === undefined) this.fail("unclosed character class", classAt);
      if (c === "]" && !(first && parts.length === 0)) break;
      if (this.classOperator()) break;
      if (c === "[") {
        const posix = this.posixClass(f);
        parts.push(posix ?? this.classBody(f, depth + 1));
        continue;
      }
      const startAt = this.pos;
      const lo = this.classAtom(f);
      if (lo.kind === "class") {
        parts.push(lo.negated ? `[^${lo.contents}]` : lo.contents);
        this.skipTrivia(f);
        if (this.peek() === "-" && this.peek(1) !== "]" && this.peek(1) !== "-") {
          this.fail("invalid range boundary: a class such as \\d cannot start a range", startAt);
        }
        continue;
      }
      if (lo.kind !== "char") this.fail("assertions cannot appear in a character class", startAt);
      const save = this.pos;
      this.skipTrivia(f);
      if (this.peek() === "-" && this.peek(1) !== "]" && this.peek(1) !== "-" && this.peek(1) !== undefined) {
        this.pos++;
        this.skipTrivia(f);
        const hiAt = this.pos;
        const hi = this.classAtom(f);
        if (hi.kind !== "char") this.fail("invalid range boundary: must be a single character", hiAt);
        if (hi.cp < lo.cp) this.fail("invalid class range: start > end", startAt);
        parts.push(`${emitChar(lo.cp)}-${emitChar(hi.cp)}`);
      } else {
        this.pos = save;
        parts.push(emitChar(lo.cp));
      }
    }
    return parts.join("");
  }

  classAtom(f: Flags): Escape {
    const c = this.peek()!;
    if (c === "\\") return this.escape(f, true);
    this.pos++;
    return { kind: "char", cp: c.codePointAt(0)! };
  }

  /** `[:name:]` or `[:^name:]` as a nested class; undefined (nothing consumed) when it is not one. */
  posixClass(f: Flags): string | undefined {
    if (this.peek(1) !== ":") return undefined;
    const close = this.cs.indexOf(":", this.pos + 2);
    if (close < 0 || this.cs[close + 1] !== "]") return undefined;
    let name = this.cs.slice(this.pos + 2, close).join("");
    const negated = name.startsWith("^");
    if (negated) name = name.slice(1);
    const contents = POSIX[name];
    if (contents === undefined) return undefined; // Rust then reads `[:...` as a nested class
    if (negated && !f.u) this.fail("a negated class with Unicode mode off (?-u) can match invalid UTF-8");
    this.pos = close + 2;
    return negated ? `[^${contents}]` : `[${contents}]`;
  }
}

/** `\p{name}` without a key: general category, then script, then binary property (loose names, `is` prefix). */
function lookupName(name: string): string | undefined {
  const tryKey = (k: string) =>
    GENERAL_CATEGORIES[k] !== undefined
      ? `General_Category=${GENERAL_CATEGORIES[k]}`
      : SCRIPTS[k] !== undefined
      ? `Script=${SCRIPTS[k]}`
      : BINARY_PROPERTIES[k];
  const k = loose(name);
  return tryKey(k) ?? (k.startsWith("is") && k.length > 2 ? tryKey(k.slice(2)) : undefined);
}

/** The JavaScript source (for the `v` flag) equivalent to a Rust regex; throws RustRegexError. */
export function translateRustRegex(pattern: string): string {
  return new Translator(pattern).translate().src;
}

/** The pattern's structure for the linear-time matcher (proto/rust_regex_vm.ts); throws RustRegexError. */
export function parseRustRegex(pattern: string): Node {
  return new Translator(pattern).translate().node;
}

/** The flags every translated pattern is compiled with (see the module comment for why `v`). */
export const RUST_REGEX_JS_FLAGS = "v";

/**
 * A RegExp that finds what the Rust regex finds (unanchored, like `Regex::is_match`). V8 backtracks, so not
 * for client-supplied values (use WholeValueRegex / SearchRegex); admission and tests use it.
 */
export function compileRustRegex(pattern: string): RegExp {
  const src = translateRustRegex(pattern);
  try {
    return new RegExp(src, RUST_REGEX_JS_FLAGS);
  } catch (e) {
    // The translation is meant to always compile; say so plainly if the engine still refuses it.
    throw new RustRegexError(
      0,
      `the JavaScript engine refused the translated pattern: ${(e as Error).message}`,
    );
  }
}

/** Why a pattern is refused, or undefined when Rust regex (and weft) accept it. */
export function rustRegexProblem(pattern: string): string | undefined {
  try {
    compileRustRegex(pattern);
    new WholeValueRegex(pattern);
    return undefined;
  } catch (e) {
    return (e as Error).message;
  }
}

function program(pattern: string, search: boolean): Program {
  const node = parseRustRegex(pattern);
  try {
    return new Program(node, search);
  } catch (e) {
    if (e instanceof ProgramTooLarge) throw new RustRegexError(0, `${e.message} (weft's limit)`);
    throw new RustRegexError(0, `the JavaScript engine refused a translated piece: ${(e as Error).message}`);
  }
}

/**
 * Rust's `is_match`: is there a match anywhere in the value? Linear time in the value's length (a Pike VM,
 * proto/rust_regex_vm.ts), as with Rust regex, whatever the pattern.
 */
export class SearchRegex {
  readonly #prog: Program;

  constructor(readonly pattern: string) {
    this.#prog = program(pattern, true);
  }

  test(value: string): boolean {
    return this.#prog.run(value, true) >= 0;
  }
}

/**
 * A ServiceProfile `pathRegex` as Linkerd's proxy compiles it: trimmed, then `^` prepended and `$`
 * appended unless already there (textually, so `a|b` becomes `^a|b$`, as in Linkerd). The result is
 * tested with an unanchored search (SearchRegex, Rust's `is_match`).
 */
export function anchorProfilePathRegex(source: string): string {
  const s = source.trim();
  return `${s.startsWith("^") ? "" : "^"}${s}${s.endsWith("$") ? "" : "$"}`;
}

/**
 * Linkerd's route-match test for a whole value (HTTPRoute path, header and query parameter regexes): the
 * leftmost-first match must start at 0 and end at the value's end. Not the same as `^(?:re)$`: with
 * `/a|/ab`, "/ab" does not match, because the preferred match is "/a".
 */
export class WholeValueRegex {
  readonly #prog: Program;

  constructor(readonly pattern: string) {
    this.#prog = program(pattern, false);
  }

  /** Linear time in the value's length, like Rust regex (a Pike VM, not V8's backtracking). */
  test(value: string): boolean {
    return this.#prog.run(value, false) === value.length;
  }
}
