import assert from "node:assert/strict";
import {
  parseRustRegex,
  RustRegexError,
  rustRegexProblem,
  SearchRegex,
  translateRustRegex,
  WholeValueRegex,
} from "./rust_regex.ts";
import type { Node } from "./rust_regex_vm.ts";

const nullable = (n: Node): boolean =>
  n.t === "char"
    ? false
    : n.t === "assert"
    ? true
    : n.t === "cat"
    ? n.items.every(nullable)
    : n.t === "alt"
    ? n.alts.some(nullable)
    : n.min === 0 || nullable(n.node);

/** A repetition of something that can match empty: V8 refuses empty iterations past the minimum, Rust does not. */
const repeatsEmpty = (n: Node): boolean =>
  n.t === "cat"
    ? n.items.some(repeatsEmpty)
    : n.t === "alt"
    ? n.alts.some(repeatsEmpty)
    : n.t === "rep"
    ? nullable(n.node) || repeatsEmpty(n.node)
    : false;

/** Deterministic xorshift, so a failure reproduces. */
function rng(seed: number): (n: number) => number {
  let s = seed;
  return (n) => {
    s ^= s << 13;
    s ^= s >>> 17;
    s ^= s << 5;
    return (s >>> 0) % n;
  };
}

// Where no repetition can match empty, leftmost-first backtracking (V8) and the Pike VM must agree.
Deno.test("the linear-time matcher agrees with V8's backtracking on random patterns and values", () => {
  // Small alphabets so patterns are often valid and values often match; short values keep V8 fast.
  const pat = [
    "a",
    "b",
    "(",
    ")",
    "|",
    "*",
    "+",
    "?",
    "{1,2}",
    "*?",
    "[ab]",
    "[^a]",
    ".",
    "^",
    "$",
    "\\b",
    "(?i)",
    "A",
    "(?:",
  ];
  const val = ["a", "b", "A", " ", "\n"];
  const r = rng(2024);
  let compared = 0;
  for (let k = 0; k < 4000; k++) {
    let p = "";
    for (let j = 1 + r(7); j > 0; j--) p += pat[r(pat.length)];
    if (rustRegexProblem(p) !== undefined || repeatsEmpty(parseRustRegex(p))) continue;
    const src = translateRustRegex(p);
    const whole = new WholeValueRegex(p), search = new SearchRegex(p);
    const jsStart = new RegExp(`^(?:${src})`, "v"), jsAny = new RegExp(src, "v");
    for (let t = 0; t < 12; t++) {
      let v = "";
      for (let j = r(7); j > 0; j--) v += val[r(val.length)];
      const m = jsStart.exec(v);
      const wantWhole = m !== null && m[0].length === v.length;
      assert.equal(
        whole.test(v),
        wantWhole,
        `whole ${JSON.stringify(p)} on ${JSON.stringify(v)} (js ${src})`,
      );
      assert.equal(search.test(v), jsAny.test(v), `search ${JSON.stringify(p)} on ${JSON.stringify(v)}`);
      compared++;
    }
  }
  assert.ok(compared > 10_000, `only ${compared} comparisons`);
});

Deno.test("nested repetition stays linear: (a+)+b on 10 000 characters in well under a second", () => {
  const long = "a".repeat(10_000);
  for (const p of ["(a+)+b", "(?:a|a)*b", "(a*)*b", ".*.*.*.*b"]) {
    const t0 = performance.now();
    assert.equal(new WholeValueRegex(p).test(long), false);
    assert.equal(new SearchRegex(p).test(long), false);
    const ms = performance.now() - t0;
    // V8 alone needs about 0.3 s for 24 characters of (a+)+b, doubling per character.
    assert.ok(ms < 1000, `${p}: ${ms.toFixed(0)} ms`);
  }
});

Deno.test("a pattern too large to compile is refused, as Rust's size limit refuses it", () => {
  const p = rustRegexProblem("(?:a{1000}){1000}");
  assert.ok(p !== undefined && /more than 100000 instructions/.test(p), p);
  assert.throws(() => new WholeValueRegex("(?:[ab]{500}){500}"), RustRegexError);
  const t0 = performance.now();
  assert.ok(rustRegexProblem("(?:(?:){100000}){100000}") !== undefined, "empty groups repeated 10^10 times");
  assert.ok(performance.now() - t0 < 2000);
});
