import assert from "node:assert/strict";
import { KubeConfig } from "@kubernetes/client-node";
import type { Manifest } from "../kinds.ts";
import { Kube } from "../kube.ts";
import { NO_SHARED_ANCHOR } from "./anchors.ts";
import { GATEWAY_NAME, gatewayIdentity, MC_NAMESPACE, REMOTE_ACCESS_TOKEN_SECRET } from "./install.ts";
import { link } from "./link_run.ts";

// deno-lint-ignore no-explicit-any
type Json = any;

const cert = (body: string) => `-----BEGIN CERTIFICATE-----\n${body}\n-----END CERTIFICATE-----\n`;

/** A cluster answering from a table of objects; applies are recorded, never sent. */
class FakeKube extends Kube {
  applied: Manifest[] = [];
  reads: string[] = [];
  constructor(server: string, readonly objects: Record<string, Json>, readonly nodes: Json[] = []) {
    const kc = new KubeConfig();
    kc.loadFromOptions({
      clusters: [{ name: "c", server }],
      users: [{ name: "u" }],
      contexts: [{ name: "x", cluster: "c", user: "u" }],
      currentContext: "x",
    });
    super(kc);
  }
  override get<T>(path: string): Promise<T | undefined> {
    this.reads.push(path);
    return Promise.resolve(this.objects[path] as T | undefined);
  }
  override list<T>(path: string): Promise<T[]> {
    return Promise.resolve((path === "/api/v1/nodes" ? this.nodes : []) as T[]);
  }
  override version() {
    return Promise.resolve({ major: "1", minor: "34", gitVersion: "v1.34.4" });
  }
  override apply(m: Manifest) {
    this.applied.push(m);
    return Promise.resolve({ result: "created" as const, object: m, changed: [] });
  }
}

function mesh(anchorsPem: string, extra: Record<string, Json> = {}): Record<string, Json> {
  return {
    "/apis/apps/v1/namespaces/weft/deployments/weft-proxy-injector": {
      spec: {
        template: {
          spec: {
            containers: [{
              name: "i",
              command: ["--proxy-image=localhost/weft:t", "--image-pull-policy=Never"],
            }],
          },
        },
      },
    },
    "/api/v1/namespaces/weft/configmaps/linkerd-identity-trust-roots": {
      data: { "ca-bundle.crt": anchorsPem },
    },
    [`/api/v1/namespaces/${MC_NAMESPACE}`]: { metadata: { name: MC_NAMESPACE } },
    ...extra,
  };
}

const token = {
  [`/api/v1/namespaces/${MC_NAMESPACE}/secrets/${REMOTE_ACCESS_TOKEN_SECRET}`]: {
    data: { token: btoa("t0k"), "ca.crt": btoa(cert("Q0E=")) },
  },
};
const gatewaySvc = {
  [`/api/v1/namespaces/${MC_NAMESPACE}/services/${GATEWAY_NAME}`]: {
    metadata: { annotations: { "mirror.linkerd.io/gateway-identity": gatewayIdentity("cluster.local") } },
    spec: {
      ports: [{ name: "mc-gateway", port: 4143, nodePort: 30143 }, {
        name: "mc-probe",
        port: 4191,
        nodePort: 30191,
      }],
    },
  },
};
const node = {
  metadata: { name: "n" },
  status: {
    addresses: [{ type: "InternalIP", address: "10.20.0.1" }],
    conditions: [{ type: "Ready", status: "True" }],
  },
};
const mirror = (name: string): Manifest[] => [{
  apiVersion: "apps/v1",
  kind: "Deployment",
  metadata: { name: `weft-service-mirror-${name}`, namespace: MC_NAMESPACE },
}];

Deno.test("link refuses clusters without a shared trust anchor and writes nothing", async () => {
  const source = new FakeKube("https://10.10.0.1:6443", mesh(cert("QUFB")));
  const target = new FakeKube("https://10.20.0.1:6443", mesh(cert("QkJC"), { ...token, ...gatewaySvc }), [
    node,
  ]);
  await assert.rejects(
    link(source, target, { clusterName: "east", gateway: true, timeoutMs: 1000, wait: false }, mirror),
    new RegExp(NO_SHARED_ANCHOR),
  );
  assert.deepEqual(source.applied, []);
});

Deno.test("link writes Secrets, Link and the service mirror; --gateway=false never reads the gateway", async () => {
  const shared = cert("QUFB");
  const source = new FakeKube("https://10.10.0.1:6443", mesh(shared + cert("Q0ND")));
  const target = new FakeKube("https://10.20.0.1:6443", mesh(shared, { ...token, ...gatewaySvc }), [node]);
  const r = await link(
    source,
    target,
    {
      clusterName: "east",
      gateway: true,
      timeoutMs: 1000,
      wait: false,
      apiServerAddress: "https://192.0.2.1:6443",
    },
    mirror,
  );
  assert.deepEqual(source.applied.map((m) => `${m.kind} ${m.metadata.namespace}/${m.metadata.name}`), [
    "Secret weft-multicluster/cluster-credentials-east",
    "Secret weft/cluster-credentials-east",
    "Link weft-multicluster/east",
    "Deployment weft-multicluster/weft-service-mirror-east",
  ]);
  assert.equal(r.plan.apiServer, "https://192.0.2.1:6443");
  assert.equal(r.plan.token, "t0k");
  assert.deepEqual(r.plan.gateway?.addresses, ["10.20.0.1"]);
  assert.equal(r.timings.readyMs, 0);

  const flatTarget = new FakeKube("https://10.20.0.1:6443", mesh(shared, token), [node]);
  const flatSource = new FakeKube("https://10.10.0.1:6443", mesh(shared));
  const f = await link(flatSource, flatTarget, {
    clusterName: "east",
    gateway: false,
    timeoutMs: 1000,
    wait: false,
  }, mirror);
  assert.equal(f.plan.gateway, undefined);
  assert.ok(!flatTarget.reads.some((p) => p.includes(`/services/${GATEWAY_NAME}`)));
  assert.equal((flatSource.applied.find((m) => m.kind === "Link") as Json).spec.gatewayAddress, "");
});

Deno.test("link explains what is missing: no install on the target, no gateway, no install on the source", async () => {
  const a = cert("QUFB");
  const noInstall = new FakeKube("https://t", mesh(a), [node]);
  await assert.rejects(
    link(
      new FakeKube("https://s", mesh(a)),
      noInstall,
      { clusterName: "e", gateway: false, timeoutMs: 1000 },
      mirror,
    ),
    /run weft multicluster install with the target's kubeconfig/,
  );
  const noGateway = new FakeKube("https://t", mesh(a, token), [node]);
  await assert.rejects(
    link(
      new FakeKube("https://s", mesh(a)),
      noGateway,
      { clusterName: "e", gateway: true, timeoutMs: 1000 },
      mirror,
    ),
    /--gateway=false/,
  );
  const bareSource = mesh(a);
  delete bareSource[`/api/v1/namespaces/${MC_NAMESPACE}`];
  await assert.rejects(
    link(new FakeKube("https://s", bareSource), noGateway, {
      clusterName: "e",
      gateway: false,
      timeoutMs: 1000,
    }, mirror),
    /install with the source's kubeconfig/,
  );
});
