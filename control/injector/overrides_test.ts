import assert from "node:assert/strict";
import { parseOverrides } from "./overrides.ts";
import { formatPortRanges } from "../../proto/port_list.ts";

Deno.test("valid overrides are parsed into typed values", () => {
  const { overrides, problems } = parseOverrides({
    "config.linkerd.io/proxy-cpu-request": "100m",
    "config.linkerd.io/proxy-memory-limit": "128Mi",
    "config.linkerd.io/skip-outbound-ports": "25, 3306,8000-8080",
    "config.linkerd.io/skip-subnets": "10.96.0.0/12,fd00::/8",
    "config.linkerd.io/default-inbound-policy": "cluster-authenticated",
    "config.linkerd.io/proxy-uid": "2103",
    "config.linkerd.io/proxy-log-level": "warn,linkerd=debug",
    "config.alpha.linkerd.io/proxy-wait-before-exit-seconds": "5",
    "config.beta.linkerd.io/proxy-enable-native-sidecar": "false",
    "config.linkerd.io/proxy-outbound-connect-timeout": "500ms",
    "unrelated.io/thing": "whatever",
  });
  assert.deepEqual(problems, []);
  assert.deepEqual(overrides.resources, { cpuRequest: "100m", memoryLimit: "128Mi" });
  assert.equal(formatPortRanges(overrides.skipOutboundPorts!), "25,3306,8000-8080");
  assert.deepEqual(overrides.skipSubnets, ["10.96.0.0/12", "fd00::/8"]);
  assert.equal(overrides.defaultInboundPolicy, "cluster-authenticated");
  assert.equal(overrides.proxyUid, 2103);
  assert.equal(overrides.waitBeforeExitSeconds, 5);
  assert.equal(overrides.nativeSidecar, false);
  assert.equal(overrides.outboundConnectTimeout, "500ms");
});

Deno.test("port list overrides: names resolve against the pod; an unknown name and each bad entry are named", () => {
  const named: Record<string, number> = { mysql: 3306 };
  const names = { portOf: (n: string) => named[n], strict: true };
  const ok = parseOverrides({ "config.linkerd.io/opaque-ports": "mysql, 4000-4001" }, names);
  assert.deepEqual(ok.problems, []);
  assert.equal(formatPortRanges(ok.overrides.opaquePorts!), "3306,4000-4001");
  const empty = parseOverrides({ "config.linkerd.io/opaque-ports": "" }, names);
  assert.deepEqual(empty.overrides.opaquePorts, [], "an empty list means none");
  const bad = parseOverrides({ "config.linkerd.io/opaque-ports": "redis,0,mysql" }, names);
  assert.equal(bad.problems.length, 1);
  assert.match(bad.problems[0].message, /"0" is not a port in 1-65535; no container port is named "redis"/);
  // A namespace's value names ports only some of its pods have: a name this pod lacks lists nothing.
  const ns = parseOverrides({ "config.linkerd.io/opaque-ports": "redis,mysql" }, { ...names, strict: false });
  assert.deepEqual(ns.problems, []);
  assert.equal(formatPortRanges(ns.overrides.opaquePorts!), "3306");
  // ... and its bad entries are reported while the good ones apply, as destination and policy read it.
  const nsBad = parseOverrides({ "config.linkerd.io/opaque-ports": "25,junk!" }, { ...names, strict: false });
  assert.equal(formatPortRanges(nsBad.overrides.opaquePorts!), "25");
  assert.equal(nsBad.problems.length, 1);
  assert.equal(nsBad.problems[0].partial, true);
  assert.match(nsBad.problems[0].message, /has bad entries, ignored: "junk!" is not a port/);
});

Deno.test("each invalid override is reported with the annotation, its value and the accepted form", () => {
  const cases: [string, string, RegExp][] = [
    ["config.linkerd.io/proxy-cpu-request", "lots", /not a quantity; want a Kubernetes quantity/],
    ["config.linkerd.io/skip-inbound-ports", "80,h ttp", /"h ttp" is not a port \(1-65535\), a range/],
    [
      "config.linkerd.io/skip-inbound-ports",
      "80,http",
      /"http" is a port name, which only a pod's annotation/,
    ],
    ["config.linkerd.io/skip-inbound-ports", "90-80", /range "90-80" ends before it starts/],
    ["config.linkerd.io/opaque-ports", "70000", /"70000" is not a port in 1-65535/],
    ["config.linkerd.io/skip-subnets", "10.0.0.0/40", /prefix length "40"/],
    ["config.linkerd.io/default-inbound-policy", "allow", /want all-unauthenticated \| all-authenticated/],
    ["config.linkerd.io/proxy-uid", "-1", /not a non-negative integer/],
    ["config.linkerd.io/proxy-log-level", "loud", /directive "loud" is not <level>/],
    ["config.beta.linkerd.io/proxy-enable-native-sidecar", "yes", /not true or false/],
    ["config.linkerd.io/proxy-inbound-connect-timeout", "5", /want a duration such as 500ms/],
  ];
  for (const [key, value, re] of cases) {
    const { problems } = parseOverrides({ [key]: value });
    assert.equal(problems.length, 1, `${key}=${value}`);
    assert.equal(problems[0].annotation, key);
    assert.match(
      problems[0].message,
      new RegExp(`annotation ${key.replaceAll(".", "\\.")}="${value.replaceAll(".", "\\.")}" is invalid`),
    );
    assert.match(problems[0].message, re, `${key}=${value}`);
  }
});

Deno.test("duration overrides: Go's grammar in, whole milliseconds out for the proxy's variables", () => {
  const { overrides, problems } = parseOverrides({
    "config.linkerd.io/proxy-inbound-connect-timeout": "1m30s",
    "config.linkerd.io/proxy-outbound-connect-timeout": "1.5s",
  });
  assert.deepEqual(problems, []);
  assert.equal(overrides.inboundConnectTimeout, "90000ms");
  assert.equal(overrides.outboundConnectTimeout, "1500ms");
  for (const [value, why] of [["-1s", /negative/], ["1d", /unknown unit "d"/], ["5", /no unit/]] as const) {
    const bad = parseOverrides({ "config.linkerd.io/proxy-inbound-connect-timeout": value });
    assert.equal(bad.problems.length, 1, value);
    assert.match(bad.problems[0].message, why);
  }
});
