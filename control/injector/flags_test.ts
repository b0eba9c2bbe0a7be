import assert from "node:assert/strict";
import { FlagError, parseCliArgs, parseInjectorArgs } from "./flags.ts";

Deno.test("injector defaults: webhook :8443, admin :9995, certificate from /var/run/weft/tls, auto sidecar mode", () => {
  const o = parseInjectorArgs([], {});
  assert.deepEqual(o.webhook, {
    hostname: "0.0.0.0",
    port: 8443,
    certFile: "/var/run/weft/tls/tls.crt",
    keyFile: "/var/run/weft/tls/tls.key",
  });
  assert.deepEqual(o.admin, { hostname: "0.0.0.0", port: 9995 });
  assert.equal(o.nativeSidecar, "auto");
  assert.equal(o.trustAnchorsFile, "/var/run/weft/identity/trust-roots/ca-bundle.crt");
  assert.equal(o.namespaceWaitMs, 1000);
  assert.equal(o.base.controlPlaneNamespace, "weft");
  assert.deepEqual(o.base.excludedNamespaces, ["kube-system", "weft"]);
  assert.deepEqual(o.base.proxyCommand, ["weft-proxy"]);
  assert.deepEqual(o.base.initCommand, ["weft-init"]);
  assert.deepEqual(o.base.awaitCommand, ["weft-await", "--timeout=120s", "--port=4191"]);
  assert.deepEqual(o.base.sleepCommand, ["weft-await", "sleep"]);
});

Deno.test("injector flags and env resolve into the config the patch uses", () => {
  const o = parseInjectorArgs([
    "--addr=127.0.0.1:9443",
    "--tls-dir=/certs/",
    "--native-sidecar=false",
    "--proxy-image=registry.example/weft:v1",
    "--image-pull-policy=IfNotPresent",
    '--proxy-command=["/usr/local/bin/deno","run","-A","/app/proxy/main.ts"]',
    "--init-command=deno run -A /app/init/main.ts",
    "--proxy-memory-limit=",
    "--proxy-cpu-limit=1",
    "--default-opaque-ports=3306,6379-6380",
    "--trust-domain=td.example",
    "--namespace-wait=250ms",
  ], { LINKERD_NAMESPACE: "mesh", KUBECONFIG: "/k" });
  assert.equal(o.webhook.certFile, "/certs/tls.crt");
  assert.equal(o.webhook.port, 9443);
  assert.equal(o.nativeSidecar, false);
  assert.equal(o.kubeconfig, "/k");
  assert.equal(o.namespaceWaitMs, 250);
  assert.equal(o.base.controlPlaneNamespace, "mesh");
  assert.deepEqual(o.base.excludedNamespaces, ["kube-system", "mesh"]);
  assert.equal(o.base.image, "registry.example/weft:v1");
  assert.deepEqual(o.base.proxyCommand, ["/usr/local/bin/deno", "run", "-A", "/app/proxy/main.ts"]);
  assert.deepEqual(o.base.initCommand, ["deno", "run", "-A", "/app/init/main.ts"]);
  assert.deepEqual(o.base.resources, { cpuRequest: "20m", memoryRequest: "32Mi", cpuLimit: "1" });
  assert.deepEqual(o.base.opaquePorts, [3306, 6379, 6380]);
  assert.equal(o.base.trustDomain, "td.example", "--trust-domain is an alias of --identity-trust-domain");
  assert.equal(o.base.version, "v1", "the proxy version defaults to the proxy image's tag");
});

Deno.test("the proxy version: --proxy-version, else the --proxy-image tag, else dev (issue 19)", () => {
  assert.equal(parseInjectorArgs([], {}).base.version, "dev");
  assert.equal(parseInjectorArgs(["--proxy-image=localhost/weft:upgrade"], {}).base.version, "upgrade");
  assert.equal(parseInjectorArgs(["--proxy-image=reg:5000/weft@sha256:ab"], {}).base.version, "dev");
  assert.equal(
    parseInjectorArgs(["--proxy-image=localhost/weft:upgrade", "--proxy-version=2.1.0"], {}).base.version,
    "2.1.0",
  );
});

Deno.test("bad flags fail naming the flag and the accepted form", () => {
  const cases: [string, RegExp][] = [
    ["--native-sidecar=maybe", /--native-sidecar: "maybe" is not auto, true or false/],
    [
      "--proxy-cpu-limit=two",
      /--proxy-cpu-limit: "two" is invalid: not a quantity; want a Kubernetes quantity/,
    ],
    ["--proxy-log-level=loud", /--proxy-log-level: "loud" is invalid/],
    ["--default-inbound-policy=open", /--default-inbound-policy: "open" is not one of all-unauthenticated/],
    ["--cluster-networks=10.0.0.0/40", /--cluster-networks: /],
    ["--default-opaque-ports=3306,99999", /--default-opaque-ports: "99999" is not a port/],
    ["--ignore-inbound-ports=mysql", /--ignore-inbound-ports: "mysql" is a port name/],
    ["--addr=8443", /--addr: "8443" is not host:port \(no :port\)/],
    ["--namespace-wait=1", /--namespace-wait: "1" is not a duration \(a number has no unit\)/],
    ["--proxy-command=", /--proxy-command: want a non-empty command/],
    ["--image-pull-policy=sometimes", /--image-pull-policy: "sometimes"/],
    ["--controller-namespace=Weft", /--controller-namespace: "Weft" is not a DNS name/],
    ["--proxy-uid=-1", /--proxy-uid: "-1" is invalid/],
    ["--tls", /unknown flag --tls; did you mean --tls-dir\?/],
    ["--tls-dir", /--tls-dir needs a value/],
    ["--frobnicate=1", /unknown flag --frobnicate/],
  ];
  for (const [arg, want] of cases) {
    assert.throws(
      () => parseInjectorArgs([arg], {}),
      (e) => e instanceof FlagError && want.test(e.message),
      arg,
    );
  }
});

Deno.test("the CLI needs trust anchors, takes one input and refuses server flags", () => {
  const o = parseCliArgs(["deploy.yaml", "--trust-anchors-file=ca.crt", "--native-sidecar=false"], {});
  assert.deepEqual([o.input, o.trustAnchorsFile, o.nativeSidecar], ["deploy.yaml", "ca.crt", false]);
  assert.deepEqual(o.base.excludedNamespaces, []);
  assert.equal(parseCliArgs(["--trust-anchors-file=ca.crt"], {}).input, "-");
  assert.throws(() => parseCliArgs([], {}), /--trust-anchors-file is required/);
  assert.throws(() => parseCliArgs(["a", "b", "--trust-anchors-file=x"], {}), /at most one input file/);
  assert.throws(
    () => parseCliArgs(["--addr=0.0.0.0:1", "--trust-anchors-file=x"], {}),
    /unknown flag --addr/,
  );
  assert.throws(
    () => parseCliArgs(["--native-sidecar=auto", "--trust-anchors-file=x"], {}),
    /not true or false/,
  );
});

Deno.test("--disable-ipv6 turns the pods' IPv6 proxying off (default on); anything but true/false is refused by name", () => {
  assert.equal(parseInjectorArgs([], {}).base.ipv6, true);
  assert.equal(parseInjectorArgs(["--disable-ipv6=true"], {}).base.ipv6, false);
  assert.equal(parseInjectorArgs(["--disable-ipv6=false"], {}).base.ipv6, true);
  assert.throws(() => parseInjectorArgs(["--disable-ipv6=yes"], {}), (e: Error) => {
    assert.ok(e instanceof FlagError);
    assert.match(e.message, /--disable-ipv6: "yes" is not true or false/);
    return true;
  });
});

Deno.test("--trusted-gateway-identities: none by default; a comma list otherwise, in the server and the CLI (issue 23)", () => {
  const gw = "weft-gateway.weft-multicluster.serviceaccount.identity.weft.cluster.local";
  assert.deepEqual(parseInjectorArgs([], {}).base.trustedGatewayIdentities, []);
  assert.deepEqual(parseCliArgs(["--trust-anchors-file=x"], {}).base.trustedGatewayIdentities, []);
  assert.deepEqual(
    parseInjectorArgs(["--trusted-gateway-identities="], {}).base.trustedGatewayIdentities,
    [],
  );
  assert.deepEqual(
    parseInjectorArgs([`--trusted-gateway-identities=${gw}, other.ns.serviceaccount.identity.weft.td`], {})
      .base
      .trustedGatewayIdentities,
    [gw, "other.ns.serviceaccount.identity.weft.td"],
  );
  assert.deepEqual(
    parseCliArgs(["--trust-anchors-file=x", `--trusted-gateway-identities=${gw}`], {}).base
      .trustedGatewayIdentities,
    [gw],
  );
  assert.throws(
    () => parseInjectorArgs(["--trusted-gateway-identities=Not An Identity"], {}),
    /--trusted-gateway-identities: "Not An Identity" is not a DNS name/,
  );
});
