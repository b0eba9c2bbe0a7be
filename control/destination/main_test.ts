import assert from "node:assert/strict";
import { parseDestinationArgs } from "./main.ts";

Deno.test("destination flags: defaults, flags over environment, the manifest's flags", () => {
  const d = parseDestinationArgs([], {});
  assert.equal(d.port, 8086);
  assert.equal(d.adminPort, 9996);
  assert.equal(d.clusterDomain, "cluster.local");
  assert.equal(d.defaultOpaquePorts, undefined);
  assert.equal(d.watchServers, true);
  const c = parseDestinationArgs(
    [
      "--cluster-domain=example.org",
      "--controller-namespace=weft",
      "--identity-trust-domain=td.example",
      "--default-opaque-ports=25, 3306",
      "--watch-servers=false",
      "--addr=[::]:18086",
    ],
    { CLUSTER_DOMAIN: "ignored.local", KUBECONFIG: "/k" },
  );
  assert.equal(c.clusterDomain, "example.org");
  assert.equal(c.controlPlaneNamespace, "weft");
  assert.equal(c.trustDomain, "td.example");
  assert.deepEqual(c.defaultOpaquePorts, [25, 3306]);
  assert.equal(c.watchServers, false);
  assert.equal(c.host, "::");
  assert.equal(c.port, 18086);
  assert.equal(c.kubeconfig, "/k");
});

Deno.test("destination flags: unknown flags and bad values are refused by name", () => {
  const cases: [string[], RegExp][] = [
    [["--cluster-domian=x"], /unknown flag --cluster-domian; known: --addr/],
    [["cluster-domain=x"], /unknown argument "cluster-domain=x"/],
    [["--default-opaque-ports=25,4000-5000"], /"4000-5000" is not a port number/],
    [["--default-opaque-ports=0"], /"0" is not a port number/],
    [["--watch-servers=no"], /--watch-servers must be true or false, got "no"/],
    [["--addr=8086"], /--addr "8086" is not host:port/],
    [["--admin-addr=host:"], /--admin-addr "host:" is not host:port/],
  ];
  for (const [args, want] of cases) assert.throws(() => parseDestinationArgs(args, {}), want, args.join(" "));
});
