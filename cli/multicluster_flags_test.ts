import assert from "node:assert/strict";
import { UsageError } from "./context.ts";
import { parseMulticlusterArgs } from "./multicluster_flags.ts";

Deno.test("multicluster flags: install defaults, --gateway=false, identities, timeout", () => {
  const o = parseMulticlusterArgs(["install"]);
  assert.equal(o.sub, "install");
  assert.equal(o.gateway, true);
  assert.deepEqual(o.allowedIdentities, ["*"]);
  assert.equal(o.timeoutMs, 300_000);
  const p = parseMulticlusterArgs([
    "install",
    "--gateway=false",
    "--gateway-allowed-identities=a.x,b.x",
    "--timeout=90s",
  ]);
  assert.equal(p.gateway, false);
  assert.deepEqual(p.allowedIdentities, ["a.x", "b.x"]);
  assert.equal(p.timeoutMs, 90_000);
  assert.equal(parseMulticlusterArgs(["install", "--gateway"]).gateway, true);
  assert.equal(parseMulticlusterArgs(["install", "--kubeconfig", "/k"]).kubeconfig, "/k");
});

Deno.test("multicluster flags: link requires a valid cluster name and the target kubeconfig", () => {
  const o = parseMulticlusterArgs([
    "link",
    "--cluster-name=east",
    "--target-kubeconfig=/east.kubeconfig",
    "--gateway-address=10.0.0.1,10.0.0.2",
    "--api-server-address=https://10.20.0.1:6443/",
  ]);
  assert.equal(o.clusterName, "east");
  assert.equal(o.targetKubeconfig, "/east.kubeconfig");
  assert.deepEqual(o.gatewayAddresses, ["10.0.0.1", "10.0.0.2"]);
  assert.equal(o.apiServerAddress, "https://10.20.0.1:6443");
  const bad = (args: string[], re: RegExp) =>
    assert.throws(() => parseMulticlusterArgs(args), (e) => e instanceof UsageError && re.test(e.message));
  bad(["link", "--target-kubeconfig=/k"], /--cluster-name is required/);
  bad(["link", "--cluster-name=East", "--target-kubeconfig=/k"], /DNS label/);
  bad(["link", "--cluster-name=east"], /--target-kubeconfig is required/);
  bad([
    "link",
    "--cluster-name=east",
    "--target-kubeconfig=/k",
    "--gateway=false",
    "--gateway-address=1.2.3.4",
  ], /makes no sense/);
  bad(
    ["link", "--cluster-name=east", "--target-kubeconfig=/k", "--api-server-address=10.0.0.1:6443"],
    /URL|https/,
  );
  bad(["unlink"], /--cluster-name is required/);
  bad(["frob"], /unknown subcommand/);
  bad(["check", "--cluster-name=x"], /unknown flag/);
  bad(["install", "--gateway-allowed-identities=a,,b"], /empty identity/);
});

Deno.test("multicluster flags: help", () => {
  assert.equal(parseMulticlusterArgs([]).help, true);
  assert.equal(parseMulticlusterArgs(["link", "--help"]).help, true);
});
