import assert from "node:assert/strict";
import { KubeConfig } from "@kubernetes/client-node";
import { CREDENTIALS_SECRET_TYPE, parseLink } from "../../control/multicluster/link.ts";
import { gatewayMetrics } from "../check/multicluster.ts";
import { NO_SHARED_ANCHOR, pemCertificates, requireSharedAnchor, sharedAnchors } from "./anchors.ts";
import { gatewayIdentity } from "./install.ts";
import {
  CLUSTER_DOMAIN_ANNOTATION,
  CLUSTER_NAME_LABEL,
  credentialsSecrets,
  linkObject,
  type LinkPlan,
  TRUST_DOMAIN_ANNOTATION,
  validClusterName,
} from "./link.ts";
import { gatewayFromService, nodeAddresses } from "./link_run.ts";
import { federatedChange } from "./unlink.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

const plan: LinkPlan = {
  clusterName: "east",
  apiServer: "https://10.20.0.1:6443",
  caPem: "-----BEGIN CERTIFICATE-----\nQUJD\n-----END CERTIFICATE-----\n",
  token: "tok3n",
  targetClusterDomain: "cluster.local",
  targetTrustDomain: "cluster.local",
  targetControlPlaneNamespace: "weft",
  gateway: {
    addresses: ["10.20.0.1"],
    port: 30143,
    identity: gatewayIdentity("cluster.local"),
    probePort: 30191,
    probePath: "/ready",
    probePeriod: "3s",
  },
  sourceControlPlaneNamespace: "weft",
};

Deno.test("credentials: two Secrets of the contract's type whose kubeconfig reaches the target with the token", () => {
  const ss: Json[] = credentialsSecrets(plan);
  assert.deepEqual(ss.map((s) => s.metadata.namespace), ["weft-multicluster", "weft"]);
  for (const s of ss) {
    assert.equal(s.metadata.name, "cluster-credentials-east");
    assert.equal(s.type, CREDENTIALS_SECRET_TYPE);
    assert.equal(s.metadata.labels[CLUSTER_NAME_LABEL], "east");
    assert.equal(s.metadata.annotations[CLUSTER_DOMAIN_ANNOTATION], "cluster.local");
    assert.equal(s.metadata.annotations[TRUST_DOMAIN_ANNOTATION], "cluster.local");
    const kc = new KubeConfig();
    kc.loadFromString(atob(s.data.kubeconfig));
    assert.equal(kc.getCurrentCluster()?.server, "https://10.20.0.1:6443");
    assert.equal(atob(kc.getCurrentCluster()!.caData!), plan.caPem);
    assert.equal(kc.getCurrentUser()?.token, "tok3n");
  }
});

Deno.test("Link: what the service mirror parses back (gateway and flat-only)", () => {
  const obj: Json = linkObject(plan);
  assert.equal(obj.apiVersion, "multicluster.linkerd.io/v1alpha2");
  assert.equal(obj.metadata.namespace, "weft-multicluster");
  const l = parseLink(obj);
  assert.equal(l.targetClusterName, "east");
  assert.equal(l.clusterCredentialsSecret, "cluster-credentials-east");
  assert.equal(l.gatewayAddress, "10.20.0.1");
  assert.equal(l.gatewayPort, 30143);
  assert.equal(
    l.gatewayIdentity,
    "weft-gateway.weft-multicluster.serviceaccount.identity.weft.cluster.local",
  );
  assert.deepEqual(l.probeSpec, { path: "/ready", port: 30191, periodMs: 3000 });
  assert.deepEqual(l.selector, { matchLabels: { "mirror.linkerd.io/exported": "true" } });

  const { gateway: _g, ...flatPlan } = plan;
  const flat = parseLink(linkObject(flatPlan) as Json);
  assert.equal(flat.gatewayAddress, "");
  assert.equal(flat.gatewayPort, 0);
  assert.deepEqual(flat.remoteDiscoverySelector, {
    matchLabels: { "mirror.linkerd.io/exported": "remote-discovery" },
  });
});

Deno.test("cluster names: DNS labels of at most 32 characters", () => {
  assert.equal(validClusterName("east"), undefined);
  assert.equal(validClusterName("self-a1b2"), undefined);
  assert.match(validClusterName("East")!, /DNS label/);
  assert.match(validClusterName("-x")!, /DNS label/);
  assert.match(validClusterName("x".repeat(33))!, /longer than 32/);
});

const cert = (body: string) => `-----BEGIN CERTIFICATE-----\n${body}\n-----END CERTIFICATE-----\n`;

Deno.test("trust anchors: shared by DER bytes whatever the line breaks; refusal names the reason", () => {
  const a = cert("QUJDREVG\nR0hJ") + cert("WFla");
  const b = cert("QUJDREVGR0hJ");
  assert.deepEqual(pemCertificates(a), ["QUJDREVGR0hJ", "WFla"]);
  assert.deepEqual(sharedAnchors(a, b), ["QUJDREVGR0hJ"]);
  requireSharedAnchor(a, b, "east");
  assert.deepEqual(sharedAnchors(a, cert("T1RIRVI=")), []);
  assert.throws(() => requireSharedAnchor(a, cert("T1RIRVI="), "east"), new RegExp(NO_SHARED_ANCHOR));
});

Deno.test("gateway from the target: Ready nodes' InternalIPs, node ports and identity from the Service", () => {
  const node = (name: string, ip: string, ready: string) => ({
    metadata: { name },
    status: {
      addresses: [{ type: "InternalIP", address: ip }],
      conditions: [{ type: "Ready", status: ready }],
    },
  });
  assert.deepEqual(nodeAddresses([node("b", "10.0.0.2", "True"), node("a", "10.0.0.1", "True")]), [
    "10.0.0.1",
    "10.0.0.2",
  ]);
  assert.deepEqual(nodeAddresses([node("a", "10.0.0.1", "True"), node("b", "10.0.0.2", "False")]), [
    "10.0.0.1",
  ]);
  const g = gatewayFromService({
    metadata: {
      annotations: {
        "mirror.linkerd.io/gateway-identity": "gw.id",
        "mirror.linkerd.io/probe-period": "5",
        "mirror.linkerd.io/probe-path": "/ready",
      },
    },
    spec: {
      ports: [{ name: "mc-gateway", port: 4143, nodePort: 31000 }, {
        name: "mc-probe",
        port: 4191,
        nodePort: 31001,
      }],
    },
  }, ["10.0.0.1"]);
  assert.deepEqual(g, {
    addresses: ["10.0.0.1"],
    port: 31000,
    identity: "gw.id",
    probePort: 31001,
    probePath: "/ready",
    probePeriod: "5s",
  });
  assert.throws(() => gatewayFromService({ metadata: {} }, []), /gateway-identity/);
});

Deno.test("unlink: a federated Service loses only this cluster's entry, and goes when nothing is left", () => {
  const rd = "multicluster.linkerd.io/remote-discovery";
  const ld = "multicluster.linkerd.io/local-discovery";
  assert.deepEqual(federatedChange(undefined, "east"), { action: "keep" });
  assert.deepEqual(federatedChange({ [rd]: "web@north" }, "east"), { action: "keep" });
  assert.deepEqual(federatedChange({ [rd]: "web@east,web@north" }, "east"), {
    action: "patch",
    remoteDiscovery: "web@north",
  });
  assert.deepEqual(federatedChange({ [rd]: "web@east" }, "east"), { action: "delete" });
  assert.deepEqual(federatedChange({ [rd]: "web@east", [ld]: "web" }, "east"), {
    action: "patch",
    remoteDiscovery: null,
  });
});

Deno.test("check: gateway_alive and probe latency read from the service mirror's metrics", () => {
  const text = [
    "# HELP gateway_alive x",
    'gateway_alive{target_cluster_name="north"} 0',
    'gateway_alive{target_cluster_name="east"} 1',
    'gateway_probe_latency_ms_sum{target_cluster_name="east"} 30',
    'gateway_probe_latency_ms_count{target_cluster_name="east"} 12',
  ].join("\n");
  assert.deepEqual(gatewayMetrics(text, "east"), { alive: true, latencyMs: 2.5 });
  assert.deepEqual(gatewayMetrics(text, "north"), { alive: false });
  assert.deepEqual(gatewayMetrics(text, "west"), {});
});
