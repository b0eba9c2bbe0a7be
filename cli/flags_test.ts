import assert from "node:assert/strict";
import { UsageError } from "./context.ts";
import { parseFlags, parseOutput, parseWindow, windowText } from "./flags.ts";
import { parseTarget } from "./kinds.ts";

const SPECS = [
  { name: "namespace", short: "n", help: "" },
  { name: "all-namespaces", short: "A", bool: true, help: "" },
  { name: "output", short: "o", help: "" },
];

Deno.test("flags: short and long, with = or a separate value, booleans and positionals", () => {
  const f = parseFlags(["deploy", "-n", "x", "--output=json", "-A", "web"], SPECS);
  assert.deepEqual(f.positionals, ["deploy", "web"]);
  assert.equal(f.values.get("namespace"), "x");
  assert.equal(f.values.get("output"), "json");
  assert.ok(f.bools.has("all-namespaces"));
  assert.ok(parseFlags(["--help"], SPECS).help);
  assert.throws(() => parseFlags(["--nope"], SPECS), UsageError);
  assert.throws(() => parseFlags(["-n"], SPECS), /needs a value/);
  assert.throws(() => parseFlags(["-A=yes"], SPECS), /takes no value/);
});

Deno.test("flags: windows as Prometheus durations, output formats, targets", () => {
  assert.equal(parseWindow("1m", "-t"), 60);
  assert.equal(parseWindow("1h30m", "-t"), 5400);
  assert.equal(windowText(5400), "1h30m");
  assert.throws(() => parseWindow("1.5m", "-t"), /not a duration/);
  assert.throws(() => parseWindow("0s", "-t"), /longer than 0s/);
  assert.equal(parseOutput(undefined), "table");
  assert.throws(() => parseOutput("yaml"), /not table, wide or json/);
  assert.equal(parseTarget("deploy/web", "x").kind.label, "deployment");
  assert.equal(parseTarget("po").kind.label, "pod");
  assert.throws(() => parseTarget("gizmo/x"), /not a resource kind/);
  assert.throws(() => parseTarget("deploy/Web"), /not a Kubernetes object name/);
  assert.throws(() => parseTarget("deploy/a/b"), /KIND\/NAME/);
});
