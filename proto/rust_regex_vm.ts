/**
 * A linear-time matcher for translated Rust regexes (a Pike VM), so that, as with Rust's regex crate, the
 * time to test a value grows linearly with its length whatever the pattern: V8's backtracking engine takes
 * exponential time on patterns such as `(a+)+b`, and the values come from clients.
 *
 * The tree comes from proto/rust_regex.ts. Leaves keep their translated JS source: a `char` node matches one
 * code point (tested with a one-character RegExp, cached per ASCII code point), an `assert` node is a
 * zero-width test at a position (tested with a sticky RegExp, lookbehind seeing the text before it).
 * Threads run in priority order, so the match found is the leftmost-first one, the same as Rust's `find`.
 */

/** The structure of a pattern; leaves carry `v`-flag JS source. */
export type Node =
  | { t: "char"; src: string }
  | { t: "assert"; src: string }
  | { t: "cat"; items: Node[] }
  | { t: "alt"; alts: Node[] }
  | { t: "rep"; node: Node; min: number; max: number | undefined; greedy: boolean };

/** Instructions; weft's bound on program size stands in for Rust's compiled-size limit. */
export const MAX_PROGRAM = 100_000;

type Inst =
  | { op: "char"; test: (cp: number) => boolean }
  | { op: "assert"; test: (text: string, at: number) => boolean }
  | { op: "split"; x: number; y: number }
  | { op: "jmp"; x: number }
  | { op: "match" };

export class ProgramTooLarge extends Error {}

function charTest(src: string): (cp: number) => boolean {
  const re = new RegExp(`^(?:${src})$`, "v");
  const ascii = new Uint8Array(128); // 0 unknown, 1 no, 2 yes
  return (cp) => {
    if (cp < 128) {
      let k = ascii[cp];
      if (k === 0) ascii[cp] = k = re.test(String.fromCodePoint(cp)) ? 2 : 1;
      return k === 2;
    }
    return re.test(String.fromCodePoint(cp));
  };
}

function assertTest(src: string): (text: string, at: number) => boolean {
  const re = new RegExp(src, "vy");
  return (text, at) => {
    re.lastIndex = at;
    return re.test(text);
  };
}

class Compiler {
  readonly prog: Inst[] = [];
  readonly #chars = new Map<string, (cp: number) => boolean>();
  readonly #asserts = new Map<string, (text: string, at: number) => boolean>();

  push(i: Inst): number {
    if (this.prog.length >= MAX_PROGRAM) {
      throw new ProgramTooLarge(`the pattern compiles to more than ${MAX_PROGRAM} instructions`);
    }
    this.prog.push(i);
    return this.prog.length - 1;
  }

  /** Nodes visited: repetitions of empty groups emit nothing but still cost time to expand. */
  #work = 0;

  emit(n: Node): void {
    if (++this.#work > 4 * MAX_PROGRAM) {
      throw new ProgramTooLarge(`the pattern expands to more than ${4 * MAX_PROGRAM} pieces`);
    }
    switch (n.t) {
      case "char": {
        let test = this.#chars.get(n.src);
        if (!test) this.#chars.set(n.src, test = charTest(n.src));
        this.push({ op: "char", test });
        return;
      }
      case "assert": {
        let test = this.#asserts.get(n.src);
        if (!test) this.#asserts.set(n.src, test = assertTest(n.src));
        this.push({ op: "assert", test });
        return;
      }
      case "cat":
        for (const x of n.items) this.emit(x);
        return;
      case "alt": {
        const jumps: number[] = [];
        n.alts.forEach((a, k) => {
          if (k < n.alts.length - 1) {
            const split = this.push({ op: "split", x: 0, y: 0 });
            (this.prog[split] as { x: number }).x = split + 1;
            this.emit(a);
            jumps.push(this.push({ op: "jmp", x: 0 }));
            (this.prog[split] as { y: number }).y = this.prog.length;
          } else {
            this.emit(a);
          }
        });
        for (const j of jumps) (this.prog[j] as { x: number }).x = this.prog.length;
        return;
      }
      case "rep": {
        for (let k = 0; k < n.min; k++) this.emit(n.node);
        if (n.max === undefined) {
          const split = this.push({ op: "split", x: 0, y: 0 });
          this.emit(n.node);
          this.push({ op: "jmp", x: split });
          this.setSplit(split, split + 1, this.prog.length, n.greedy);
        } else {
          const splits: number[] = [];
          for (let k = n.min; k < n.max; k++) {
            splits.push(this.push({ op: "split", x: 0, y: 0 }));
            this.emit(n.node);
          }
          for (const s of splits) this.setSplit(s, s + 1, this.prog.length, n.greedy);
        }
        return;
      }
    }
  }

  /** `body` first when greedy, `out` first when lazy. */
  setSplit(at: number, body: number, out: number, greedy: boolean): void {
    this.prog[at] = greedy ? { op: "split", x: body, y: out } : { op: "split", x: out, y: body };
  }
}

/** Everything that matches one code point, for the unanchored search's lazy prefix. */
const ANY: Node = { t: "char", src: "[\\u{0}-\\u{10ffff}]" };

/** A compiled pattern; `search` prepends a lazy `.*?` so a match may start anywhere. */
export class Program {
  readonly #prog: Inst[];
  /** Per-step visit marks (generation numbers), reused across runs. */
  readonly #mark: Uint32Array;
  #gen = 0;

  constructor(root: Node, search: boolean) {
    const c = new Compiler();
    c.emit(
      search
        ? { t: "cat", items: [{ t: "rep", node: ANY, min: 0, max: undefined, greedy: false }, root] }
        : root,
    );
    c.push({ op: "match" });
    this.#prog = c.prog;
    this.#mark = new Uint32Array(this.#prog.length);
  }

  get size(): number {
    return this.#prog.length;
  }

  /**
   * Runs from index 0. `firstOnly`: stop at the first match of any thread (is there a match?); else the end
   * of the leftmost-first match (Rust's `find` from 0). Returns the end index, or -1.
   */
  run(text: string, firstOnly: boolean): number {
    let clist: number[] = [];
    let matched = -1;
    this.#gen++;
    this.#add(clist, 0, text, 0);
    for (let at = 0;;) {
      if (clist.length === 0) break;
      const cp = at < text.length ? text.codePointAt(at)! : -1;
      const next = at + (cp > 0xffff ? 2 : 1);
      const nlist: number[] = [];
      this.#gen++;
      for (const pc of clist) {
        const inst = this.#prog[pc];
        if (inst.op === "match") {
          matched = at;
          if (firstOnly) return matched;
          break; // lower-priority threads lose to this match
        }
        if (inst.op === "char" && cp >= 0 && inst.test(cp)) this.#add(nlist, pc + 1, text, next);
      }
      if (cp < 0) break;
      clist = nlist;
      at = next;
    }
    return matched;
  }

  /** Follows jumps, splits (in priority order) and assertions at `at`; queues char and match instructions. */
  #add(list: number[], start: number, text: string, at: number): void {
    const stack = [start];
    while (stack.length > 0) {
      const pc = stack.pop()!;
      if (this.#mark[pc] === this.#gen) continue;
      this.#mark[pc] = this.#gen;
      const inst = this.#prog[pc];
      switch (inst.op) {
        case "jmp":
          stack.push(inst.x);
          break;
        case "split":
          stack.push(inst.y, inst.x);
          break;
        case "assert":
          if (inst.test(text, at)) stack.push(pc + 1);
          break;
        default:
          list.push(pc);
      }
    }
  }
}
