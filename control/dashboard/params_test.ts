import assert from "node:assert/strict";
import { chartWindowParam, kindParam, nameParam, namespaceParam, statWindowParam } from "./params.ts";
import { ApiError } from "./server.ts";

const q = (s: string) => new URLSearchParams(s);

function refused(f: () => unknown, re: RegExp) {
  assert.throws(f, (e: unknown) => e instanceof ApiError && e.status === 400 && re.test(e.message));
}

Deno.test("params: names and namespaces are Kubernetes names, or a 400 naming the parameter", () => {
  assert.equal(namespaceParam(q("ns=weft-demo"), true), "weft-demo");
  assert.equal(namespaceParam(q(""), false), undefined);
  refused(() => namespaceParam(q(""), true), /^ns: a namespace is required/);
  refused(() => namespaceParam(q("ns=a/b"), true), /^ns: "a\/b" is not a namespace name/);
  refused(() => namespaceParam(q('ns={x="y"}'), true), /^ns:/);
  refused(() => nameParam(q("name=Web")), /^name:/);
  assert.equal(nameParam(q("name=web-1.x")), "web-1.x");
});

Deno.test("params: kinds the dashboard shows, windows it offers", () => {
  assert.equal(kindParam(q("kind=deploy")).label, "deployment");
  assert.equal(kindParam(q("")).label, "deployment");
  refused(() => kindParam(q("kind=secret")), /^kind: "secret" is not one of/);
  refused(() => kindParam(q("kind=rs")), /^kind:/);
  assert.deepEqual(statWindowParam(q("window=5m")), { text: "5m", seconds: 300 });
  refused(() => statWindowParam(q("window=1y")), /^window:/);
  assert.equal(chartWindowParam(q("")).name, "15m");
  assert.equal(chartWindowParam(q("window=1h&step=60")).step, 60);
  assert.equal(chartWindowParam(q("window=1h&step=60")).rateWindow, 120);
  refused(() => chartWindowParam(q("window=5m&step=1")), /^step:/);
  refused(() => chartWindowParam(q("window=6h&step=7")), /^step:/);
  refused(() => chartWindowParam(q("window=2d")), /^window:/);
});
