import assert from "node:assert/strict";
import {
  findViolations,
  formatViolation,
  type ImportEdge,
  type ImportRule,
  matchesPath,
  unusedAllowances,
} from "./engine.ts";
import { IMPORT_RULES } from "./rules.ts";

const edge = (file: string, target: string, line = 1): ImportEdge => ({ file, line, target });

Deno.test("a pattern ending in / is a folder, an empty one is everything, anything else one file", () => {
  assert.equal(matchesPath("control/k8s/mod.ts", "control/"), true);
  assert.equal(matchesPath("controller/x.ts", "control/"), false);
  assert.equal(matchesPath("proxy/main.ts", "proxy/main.ts"), true);
  assert.equal(matchesPath("proxy/main_test.ts", "proxy/main.ts"), false);
  assert.equal(matchesPath("anything/at/all.ts", ""), true);
});

Deno.test("an import a rule forbids is a violation unless the importing file is allowlisted", () => {
  const rule: ImportRule = {
    name: "generated code only through proto/",
    files: [""],
    forbid: ["proto/gen/"],
    allow: ["proto/", "proxy/legacy.ts"],
  };
  const got = findViolations([
    edge("proxy/route/table.ts", "proto/gen/outbound.ts", 7),
    edge("proxy/legacy.ts", "proto/gen/outbound.ts"),
    edge("proto/ip.ts", "proto/gen/net.ts"),
    edge("proxy/route/table.ts", "proto/ports.ts"),
  ], [rule]);
  assert.deepEqual(got.map(formatViolation), [
    "proxy/route/table.ts:7 imports proto/gen/outbound.ts: generated code only through proto/",
  ]);
});

Deno.test("violations come sorted by file and line, one per broken rule", () => {
  const rules: ImportRule[] = [
    { name: "a", files: ["x/"], forbid: ["y/"] },
    { name: "b", files: [""], forbid: ["y/gen/"] },
  ];
  const got = findViolations([
    edge("x/b.ts", "y/one.ts", 4),
    edge("x/a.ts", "y/gen/two.ts", 9),
    edge("x/a.ts", "y/one.ts", 2),
  ], rules).map(formatViolation);
  assert.deepEqual(got, [
    "x/a.ts:2 imports y/one.ts: a",
    "x/a.ts:9 imports y/gen/two.ts: a",
    "x/a.ts:9 imports y/gen/two.ts: b",
    "x/b.ts:4 imports y/one.ts: a",
  ]);
});

Deno.test("an allowlisted file that no longer imports forbidden code is reported as removable", () => {
  const rule: ImportRule = {
    name: "gen",
    files: [""],
    forbid: ["proto/gen/"],
    allow: ["proto/", "proxy/still.ts", "proxy/moved.ts"],
  };
  const unused = unusedAllowances([edge("proxy/still.ts", "proto/gen/net.ts")], [rule]);
  // The folder entry states a layer and is never reported.
  assert.deepEqual(unused.map((u) => u.pattern), ["proxy/moved.ts"]);
});

Deno.test("the repository's table forbids the boundaries of the architecture", () => {
  const broken = [
    edge("control/destination/server.ts", "proxy/transport/tls.ts"),
    edge("proxy/discovery/clients.ts", "control/grpc/server_options.ts"),
    edge("init/rules.ts", "control/k8s/mod.ts"),
    edge("init/rules.ts", "proxy/config/config.ts"),
    edge("proto/ports.ts", "proxy/log.ts"),
    edge("manifests/not_allowlisted.ts", "proto/gen/destination.ts"),
    edge("proxy/not_allowlisted.ts", "proto/gen_messages/outbound.ts"),
    edge("proxy/transport/tls.ts", "proxy/outbound/outbound.ts"),
    edge("proxy/http/h1/server.ts", "proxy/route/table.ts"),
    edge("proxy/route/outbound.ts", "proxy/discovery/clients.ts"),
    edge("proxy/inbound/inbound.ts", "proxy/outbound/resolve.ts"),
    edge("proxy/core/clock.ts", "proxy/testing/netns.ts"),
  ];
  const hit = findViolations(broken, IMPORT_RULES).map((v) => `${v.edge.file} -> ${v.edge.target}`);
  assert.deepEqual(new Set(hit), new Set(broken.map((e) => `${e.file} -> ${e.target}`)));
  const fine = [
    edge("init/config.ts", "proto/ports.ts"),
    edge("control/destination/server.ts", "proto/support/clock.ts"),
    edge("proto/http_method.ts", "proto/gen/http_types.ts"),
    edge("proto/gen/outbound.ts", "proto/gen/net.ts"),
    edge("manifests/check.ts", "control/injector/decision.ts"),
    edge("proxy/outbound/http/logical.ts", "proxy/route/table.ts"),
    edge("proxy/route/outbound.ts", "proxy/balance/balancer.ts"),
    edge("proxy/http/h1/server_test.ts", "proxy/testing/netns.ts"),
    edge("proxy/run.ts", "proxy/admin/admin.ts"),
  ];
  assert.deepEqual(findViolations(fine, IMPORT_RULES).map(formatViolation), []);
});

Deno.test("a product-code-only rule does not hold tests and test helpers to it", () => {
  const rule: ImportRule = {
    name: "http/ imports nothing above it",
    files: ["proxy/http/"],
    forbid: ["proxy/route/"],
    productCodeOnly: true,
  };
  const got = findViolations([
    edge("proxy/http/h1/server.ts", "proxy/route/table.ts", 3),
    edge("proxy/http/h1/server_test.ts", "proxy/route/table.ts"),
    edge("proxy/http/h2/testing.ts", "proxy/route/table.ts"),
    edge("proxy/http/h2/hpack_bench.ts", "proxy/route/table.ts"),
  ], [rule]);
  assert.deepEqual(got.map(formatViolation), [
    "proxy/http/h1/server.ts:3 imports proxy/route/table.ts: http/ imports nothing above it",
  ]);
});
