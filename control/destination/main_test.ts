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
  // Linkerd's --default-opaque-ports takes ranges; the policy controller's spellings are aliases.
  const r = parseDestinationArgs(
    ["--default-opaque-ports=25,4000-4002", "--control-plane-namespace=mesh", "--trust-domain=td"],
    {},
  );
  assert.deepEqual(r.defaultOpaquePorts, [25, 4000, 4001, 4002]);
  assert.equal(r.controlPlaneNamespace, "mesh");
  assert.equal(r.trustDomain, "td");
});

Deno.test("destination flags: unknown flags and bad values are refused by name", () => {
  const cases: [string[], RegExp][] = [
    [["--cluster-domian=x"], /unknown flag --cluster-domian; did you mean --cluster-domain\?/],
    [["cluster-domain=x"], /unexpected argument "cluster-domain=x"/],
    [["--default-opaque-ports=25,mysql"], /--default-opaque-ports: "mysql" is a port name/],
    [["--default-opaque-ports=0"], /--default-opaque-ports: "0" is not a port in 1-65535/],
    [["--watch-servers=no"], /--watch-servers: "no" is not true or false/],
    [["--addr=8086"], /--addr: "8086" is not host:port \(no :port\)/],
    [["--admin-addr=host:"], /--admin-addr: "host:" is not host:port \(no port\)/],
  ];
  for (const [args, want] of cases) assert.throws(() => parseDestinationArgs(args, {}), want, args.join(" "));
});
