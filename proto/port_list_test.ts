import assert from "node:assert/strict";
import {
  formatPortRanges,
  parsePortList,
  parsePortRanges,
  portListCache,
  PortListError,
  portListHas,
  resolvePortList,
} from "./port_list.ts";

const W = "config.linkerd.io/opaque-ports";

Deno.test("port list: numbers, ranges and names, spaces and empty entries ignored", () => {
  const l = parsePortList(" 25, 8000-8080 ,,mysql,", W);
  assert.deepEqual(l.errors, []);
  assert.deepEqual(l.entries, [
    { kind: "range", from: 25, to: 25 },
    { kind: "range", from: 8000, to: 8080 },
    { kind: "name", name: "mysql" },
  ]);
  assert.deepEqual(parsePortList("", W).entries, []);
});

Deno.test("port list: each bad entry is an error naming the entry and the annotation; good ones stay", () => {
  const l = parsePortList("3306,70000,0,90-80,1-99999,my sql,Mysql,a--b,-5,abcdefghijklmnop", W);
  assert.deepEqual(l.entries, [{ kind: "range", from: 3306, to: 3306 }]);
  assert.deepEqual(l.errors.map((e) => e.entry), [
    "70000",
    "0",
    "90-80",
    "1-99999",
    "my sql",
    "Mysql",
    "a--b",
    "-5",
    "abcdefghijklmnop",
  ]);
  for (const e of l.errors) {
    assert.ok(e instanceof PortListError);
    assert.ok(e.message.startsWith(`${W}: `), e.message);
    assert.ok(e.message.includes(`"${e.entry}"`), e.message);
  }
  assert.match(l.errors[0].message, /"70000" is not a port in 1-65535/);
  assert.match(l.errors[2].message, /range "90-80" ends before it starts/);
  assert.match(
    l.errors[4].message,
    /is not a port \(1-65535\), a range such as 8000-8080 or a container port name/,
  );
});

Deno.test("port list: names resolve against the pod; an unknown name is an error", () => {
  const named: Record<string, number> = { mysql: 3306 };
  const l = parsePortList("mysql,redis,80", W);
  const r = resolvePortList(l, (n) => named[n]);
  assert.deepEqual(r.ranges, [{ from: 3306, to: 3306 }, { from: 80, to: 80 }]);
  assert.deepEqual(r.errors.map((e) => e.message), [`${W}: no container port is named "redis"`]);
  assert.equal(portListHas(l, 3306, (n) => named[n]), true);
  assert.equal(portListHas(l, 6379, (n) => named[n]), false);
  assert.equal(portListHas(l, 80, () => undefined), true);
});

Deno.test("port list: the numeric form refuses names and throws the first bad entry", () => {
  assert.deepEqual(parsePortRanges("1, 3-4,", "X"), [{ from: 1, to: 1 }, { from: 3, to: 4 }]);
  assert.throws(() => parsePortRanges("80,mysql", "X"), /X: "mysql" is a port name; only ports and ranges/);
  assert.throws(() => parsePortRanges("5-4,junk", "X"), /X: range "5-4" ends before it starts/);
  assert.equal(formatPortRanges(parsePortRanges("25,4000-4100", "X")), "25,4000-4100");
});

Deno.test("port list cache: a value's errors are reported once", () => {
  const seen: string[] = [];
  const get = portListCache(W, (errs) => seen.push(...errs.map((e) => e.entry)), 2);
  assert.equal(get("x!,25"), get("x!,25"));
  get("1");
  get("2"); // evicts
  get("x!,25");
  assert.deepEqual(seen, ["x!", "x!"]);
});
