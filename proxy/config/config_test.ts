import assert from "node:assert/strict";
import { ProxyEnv, WeftProxyEnv } from "../../proto/env.ts";
import { resolveProxyConfig } from "./config.ts";
import { ConfigError, parseDuration, parsePortSet } from "./parse.ts";
import { createTestCa } from "../testing/certs.ts";

const ca = await createTestCa("config-test");

function baseEnv(): Record<string, string> {
  return {
    [ProxyEnv.destinationSvcAddr]: "127.0.0.1:8086",
    [ProxyEnv.policySvcAddr]: "localhost.:8090",
    [ProxyEnv.identitySvcAddr]: "127.0.0.1:8080",
    [ProxyEnv.policyWorkload]: '{"ns":"default","pod":"web-0"}',
    [ProxyEnv.identityTrustAnchors]: ca.certPem,
    [ProxyEnv.identityLocalName]: "web.default.serviceaccount.identity.linkerd.cluster.local",
    [ProxyEnv.identityDir]: "/run/l5d/id",
    [ProxyEnv.identityTokenFile]: "/run/l5d/token",
  };
}

function resolve(over: Record<string, string | undefined>) {
  const env: Record<string, string | undefined> = { ...baseEnv(), ...over };
  return resolveProxyConfig((n) => env[n]);
}

function throwsNaming(variable: string, over: Record<string, string | undefined>, re?: RegExp) {
  assert.throws(() => resolve(over), (e: Error) => {
    assert.ok(e instanceof ConfigError, `want ConfigError, got ${e}`);
    assert.equal(e.variable, variable);
    if (re) assert.match(e.message, re);
    return true;
  });
}

Deno.test("proxy config: minimal loopback env resolves with Linkerd's defaults", () => {
  const c = resolve({});
  assert.equal(c.destination.plaintext, true);
  assert.equal(c.policy.plaintext, true, "localhost. with the dot is loopback");
  assert.deepEqual(c.inboundListen, { ip: "0.0.0.0", port: 4143 });
  assert.deepEqual(c.outboundListen, [{ ip: "127.0.0.1", port: 4140 }]);
  assert.deepEqual(c.adminListen, { ip: "127.0.0.1", port: 4191 });
  assert.equal(c.inboundDefaultPolicy, "all-unauthenticated");
  assert.equal(c.inboundConnectTimeoutMs, 300);
  assert.equal(c.outboundConnectTimeoutMs, 1000);
  assert.equal(c.shutdownEndpointEnabled, false);
  assert.deepEqual(c.controlBackoff, { minMs: 100, maxMs: 60_000, jitter: 0.1 });
});

Deno.test("proxy config: optional values parse", () => {
  const c = resolve({
    [ProxyEnv.outboundListenAddrs]: "127.0.0.1:4140,[::1]:4140",
    [ProxyEnv.inboundPorts]: "8080,9000-9002",
    [ProxyEnv.inboundDefaultPolicy]: "cluster-authenticated",
    [ProxyEnv.policyClusterNetworks]: "10.0.0.0/8,fd00::/8",
    [ProxyEnv.inboundIps]: "10.1.2.3,fd00::1",
    [ProxyEnv.shutdownEndpointEnabled]: "true",
    [ProxyEnv.controlStreamIdleTimeout]: "5m",
  });
  assert.deepEqual(c.outboundListen, [{ ip: "127.0.0.1", port: 4140 }, { ip: "::1", port: 4140 }]);
  assert.deepEqual([...c.inboundPorts], [8080, 9000, 9001, 9002]);
  assert.deepEqual(c.clusterNetworks, [{ ip: "10.0.0.0", prefix: 8 }, { ip: "fd00::", prefix: 8 }]);
  assert.deepEqual(c.inboundIps, ["10.1.2.3", "fd00::1"]);
  assert.equal(c.shutdownEndpointEnabled, true);
  assert.equal(c.controlStream.idleTimeoutMs, 300_000);
});

Deno.test("proxy config: bad or missing values name the variable", () => {
  throwsNaming(ProxyEnv.destinationSvcAddr, { [ProxyEnv.destinationSvcAddr]: undefined }, /must be set/);
  throwsNaming(ProxyEnv.destinationSvcName, {
    [ProxyEnv.destinationSvcAddr]: "dst.linkerd.svc.cluster.local.:8086",
  });
  throwsNaming(ProxyEnv.inboundConnectTimeout, { [ProxyEnv.inboundConnectTimeout]: "300" }, /not a duration/);
  throwsNaming(ProxyEnv.inboundListenAddr, { [ProxyEnv.inboundListenAddr]: "0.0.0.0" });
  throwsNaming(ProxyEnv.inboundPorts, { [ProxyEnv.inboundPorts]: "80,99999" });
  throwsNaming(ProxyEnv.inboundDefaultPolicy, { [ProxyEnv.inboundDefaultPolicy]: "allow" }, /not one of/);
  throwsNaming(ProxyEnv.policyClusterNetworks, {
    [ProxyEnv.inboundDefaultPolicy]: "cluster-unauthenticated",
  });
  throwsNaming(ProxyEnv.identityTrustAnchors, { [ProxyEnv.identityTrustAnchors]: "not pem" }, /no PEM/);
  throwsNaming(ProxyEnv.identityLocalName, { [ProxyEnv.identityLocalName]: "web.default.svc." }, /dot/);
  throwsNaming(ProxyEnv.identityDisabled, { [ProxyEnv.identityDisabled]: "true" });
  throwsNaming(ProxyEnv.shutdownEndpointEnabled, { [ProxyEnv.shutdownEndpointEnabled]: "yes" });
  throwsNaming(ProxyEnv.identityServerName, {
    [ProxyEnv.identityLocalName]: undefined,
    [ProxyEnv.identityServerId]: "a.b.c",
    [ProxyEnv.identityServerName]: "a.b.d",
  });
});

Deno.test("proxy config: duration and port-set formats", () => {
  assert.equal(parseDuration("X", "0"), 0);
  assert.equal(parseDuration("X", "1500ms"), 1500);
  assert.equal(parseDuration("X", "2h"), 7_200_000);
  assert.throws(() => parseDuration("X", "5"), /X: "5" is not a duration/);
  assert.throws(() => parseDuration("X", "1.5s"));
  assert.deepEqual([...parsePortSet("X", " 1 ,3-4,")], [1, 3, 4]);
  assert.throws(() => parsePortSet("X", "5-4"), /ends before/);
});

Deno.test("proxy config: LINKERD2_PROXY_ACCESS_LOG is apache, json or unset", () => {
  assert.equal(resolve({}).accessLog, undefined);
  assert.equal(resolve({ [ProxyEnv.accessLog]: "apache" }).accessLog, "apache");
  assert.equal(resolve({ [ProxyEnv.accessLog]: "json" }).accessLog, "json");
  throwsNaming(ProxyEnv.accessLog, { [ProxyEnv.accessLog]: "/var/log/access" }, /want apache or json/);
});

Deno.test("proxy config: gateway mode is off by default; WEFT_PROXY_INBOUND_GATEWAY or Linkerd's suffixes turn it on", () => {
  const G = WeftProxyEnv.inboundGateway, S = ProxyEnv.inboundGatewaySuffixes;
  assert.equal(resolve({}).gateway, undefined);
  assert.deepEqual(resolve({}).trustedGatewayIdentities, new Set());
  assert.deepEqual(resolve({ [G]: "true" }).gateway, { suffixes: ["svc.cluster.local"] });
  assert.deepEqual(resolve({ [S]: "svc.east.local." }).gateway, { suffixes: ["svc.east.local"] });
  assert.equal(resolve({ [G]: "false", [S]: "svc.east.local." }).gateway, undefined);
  throwsNaming(G, { [G]: "yes" });
  throwsNaming(S, { [S]: "cluster.local." }, /svc\.<cluster domain>/);
  const gw = "weft-gateway.weft-multicluster.serviceaccount.identity.weft.cluster.local";
  const T = WeftProxyEnv.inboundTrustedGatewayIdentities;
  assert.deepEqual(resolve({ [T]: ` ${gw}, ` }).trustedGatewayIdentities, new Set([gw]));
  throwsNaming(T, { [T]: "Not A Name" });
});
