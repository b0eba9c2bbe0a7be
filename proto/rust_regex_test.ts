import assert from "node:assert/strict";
import {
  compileRustRegex,
  RustRegexError,
  rustRegexProblem,
  translateRustRegex,
  WholeValueRegex,
} from "./rust_regex.ts";

/** Full-value test with Linkerd's route semantics. */
const whole = (pattern: string, value: string) => new WholeValueRegex(pattern).test(value);

function refused(pattern: string, why: RegExp): void {
  const p = rustRegexProblem(pattern);
  assert.ok(p !== undefined, `${JSON.stringify(pattern)} must be refused`);
  assert.match(p, why, `${JSON.stringify(pattern)}: ${p}`);
}

Deno.test("patterns Rust regex accepts and JavaScript refuses are accepted and evaluated", () => {
  // Each of these throws with `new RegExp(p, "u")`, the check weft used before.
  for (
    const p of [
      "(?i)/api",
      "/a\\-b",
      "\\!x",
      '\\"q',
      "(?P<id>\\d+)",
      "\\Ax\\z",
      "[[:digit:]]",
      "\\pL",
      "a\\ b",
      "\\#",
    ]
  ) {
    assert.throws(() => new RegExp(p, "u"), `${p} is not valid JS with u; the test would prove nothing`);
    assert.equal(rustRegexProblem(p), undefined, p);
  }
  assert.ok(whole("/a\\-b\\/c", "/a-b/c"));
  assert.ok(whole("/users/(?P<id>\\d+)", "/users/42"));
  assert.ok(whole("(?<v>v[0-9])/x", "v1/x"));
  assert.ok(whole("a\\ b\\#", "a b#"));
});

Deno.test("patterns JavaScript accepts and Rust regex refuses are refused, naming what and where", () => {
  refused("(a)\\1", /backreferences.*character 4/);
  refused("(?<n>a)\\k<n>", /backreferences/);
  refused("(?=a)b", /look-around/);
  refused("(?!a)b", /look-around/);
  refused("(?<=a)b", /look-around/);
  refused("(?<!a)b", /look-around/);
  refused("(?>a)", /atomic/);
  refused("\\e", /unrecognized escape sequence \\e/);
  refused("\\cA", /unrecognized escape/);
  refused("a{,3}", /\{,n\} is not supported/);
  refused("\\Qa.b\\E", /\\Q\.\.\.\\E/);
  refused("a{3,2}", /start > end/);
  refused("[z-a]", /start > end/);
  refused("[\\d-z]", /range boundary/);
  refused("*a", /missing expression/);
  refused("(?i)*", /missing expression/);
  refused("a)", /unopened group/);
  refused("(a", /unclosed group.*character 1/);
  refused("[a", /unclosed character class/);
  refused("(?q)", /unrecognized flag 'q'/);
  refused("(?ii)", /duplicate flag/);
  refused("(?i-)", /negation/);
  refused("(?P<a>x)(?P<a>y)", /duplicate capture group name "a"/);
  refused("\\x{110000}", /not a Unicode scalar value/);
  refused("\\p{NotAProperty}", /unknown Unicode property/);
  refused("(?-u).", /invalid UTF-8/);
  refused("(?-u)[^a]", /invalid UTF-8/);
  refused("(?-u)\\pL", /Unicode mode off/);
  refused("a{100001}", /100000/);
  assert.equal(rustRegexProblem("/a{1001}"), undefined, "Rust accepts counts above 1000");
  let e: unknown;
  try {
    translateRustRegex("ab(?=c)");
  } catch (err) {
    e = err;
  }
  assert.ok(e instanceof RustRegexError);
  assert.equal(e.offset, 2);
});

Deno.test("inline flags: (?i) to the end of its group, scoped (?i:...), negation, and (?s) (?m) (?U) (?x) (?R)", () => {
  assert.ok(whole("(?i)/API/v\\d+", "/api/V2"));
  assert.ok(!whole("/API", "/api"));
  // `(?i)` covers later alternatives of the same group, not what came before it.
  const re = compileRustRegex("^(?:a(?i)b|c)$");
  assert.deepEqual(["ab", "aB", "C", "Ab"].map((s) => re.test(s)), [true, true, true, false]);
  assert.ok(whole("x(?i:y)z", "xYz") && !whole("x(?i:y)z", "xYZ"));
  assert.ok(whole("(?i)a(?-i)b", "Ab") && !whole("(?i)a(?-i)b", "AB"));
  assert.ok(whole("(?i)[a-c]+", "AbC"));
  // `.` excludes only \n (JS's also excludes \r); `(?s)` includes it.
  assert.ok(whole(".", "\r") && !whole(".", "\n") && whole("(?s).", "\n"));
  assert.ok(!whole("(?R).", "\r"));
  // `$` is the end of the text; `(?m)` adds line ends.
  assert.ok(!compileRustRegex("a$").test("a\nb") && compileRustRegex("(?m)a$").test("a\nb"));
  assert.ok(compileRustRegex("(?mR)^b$").test("a\r\nb\r\n") && !compileRustRegex("(?mR)^$").test("a\r\nb"));
  // `(?U)` swaps greediness, visible through Linkerd's leftmost-first whole-value check.
  assert.ok(whole("a+", "aaa") && !whole("(?U)a+", "aaa") && whole("(?U)a+?", "aaa"));
  assert.ok(whole("(?x) / api \\  [0-9] + # version\n", "/api 12"));
});

Deno.test("classes: POSIX, Perl (Unicode), \\p, nesting and set operators", () => {
  assert.ok(whole("[[:alpha:]]+", "abZ") && !whole("[[:alpha:]]+", "ab1"));
  assert.ok(whole("[[:^digit:]]+", "ab") && !whole("[[:^digit:]]", "1"));
  assert.ok(whole("[[:foo:]]+", ":fo"), "an unknown POSIX name is a nested class, as in Rust");
  assert.ok(whole("\\d+", "٣4"), "\\d is Unicode Nd, as in Rust");
  assert.ok(whole("(?-u)\\d", "4") && !whole("(?-u)\\d", "٣"));
  assert.ok(whole("\\w+", "héllo_1") && !whole("\\w", "-"));
  assert.ok(whole("\\s", "\u2003") && !whole("\\S", " "));
  assert.ok(whole("\\pL+", "héllo") && !whole("\\PL", "é"));
  assert.ok(whole("\\p{Greek}+", "αβγ") && !whole("\\p{Greek}", "a"));
  assert.ok(whole("\\p{greek}\\p{Script=Latin}\\p{sc:latn}\\p{gc=Lu}\\p{Uppercase_Letter}", "αabCD"));
  assert.ok(whole("\\p{^Greek}", "a") && whole("\\p{sc!=Greek}", "a") && !whole("\\P{Greek}", "α"));
  assert.ok(whole("[a-z&&[^aeiou]]+", "bcd") && !whole("[a-z&&[^aeiou]]", "a"));
  assert.ok(whole("[a-z--[aeiou]]", "b") && !whole("[a-z--[aeiou]]", "e"));
  assert.ok(whole("[a-c~~b-d]+", "ad") && !whole("[a-c~~b-d]", "b"));
  assert.ok(whole("[]a]+", "]a") && whole("[^]a]", "b") && whole("[a-]+", "-a"));
  assert.ok(whole("[\\d\\-/]+", "1-2/3"));
  assert.ok(whole("\\x41\\x{1F600}\\u00e9\\U0001F600", "A😀é😀"));
});

Deno.test("assertions: \\A \\z \\b (Unicode word characters) and its Rust 1.10 forms", () => {
  assert.ok(compileRustRegex("\\Aab\\z").test("ab") && !compileRustRegex("\\Aab\\z").test("ab\n"));
  assert.ok(compileRustRegex("\\bfoo\\b").test("é foo") && !compileRustRegex("\\bfoo\\b").test("éfoo"));
  assert.ok(compileRustRegex("\\<foo\\>").test("a foo b") && !compileRustRegex("\\<oo").test("foo"));
  assert.ok(compileRustRegex("\\b{start}x\\b{end}").test("x") && compileRustRegex("x\\B").test("xy"));
  assert.ok(compileRustRegex("\\b{2}x").test(" x"), "\\b{2} is a repetition of \\b, not a special boundary");
  refused("\\b{foo}", /\\b\{start\}/);
});

Deno.test("repetition: bounds, lazy, repeated repetition", () => {
  assert.ok(
    whole("a{2,3}", "aaa") && !whole("a{2,3}", "aaaa") && whole("a{2,}", "aaaaa") && whole("a{2}", "aa"),
  );
  assert.ok(whole("x{2}{3}", "xxxxxx"));
  assert.ok(whole("/v(?:1|2)?", "/v"));
  refused("a{ 1 }", /decimal count/);
  assert.ok(whole("(?x)a{ 1 , 2 }", "aa"), "spaces inside braces only in (?x) mode");
});

Deno.test("whole-value matching follows Linkerd: the leftmost-first match must span the value", () => {
  // `^(?:/a|/ab)$` would match "/ab"; Linkerd's find() prefers "/a", which does not span it.
  assert.ok(!whole("/a|/ab", "/ab"));
  assert.ok(whole("/ab|/a", "/ab"));
  assert.ok(!whole("/foo.*?", "/foo/bar"));
  assert.ok(!whole("/foo", "/foo/bar") && !whole("/foo", "x/foo"));
});
