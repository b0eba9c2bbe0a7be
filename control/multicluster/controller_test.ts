import assert from "node:assert/strict";
import { Registry } from "prom-client";
import { FakeEventSource, type KubeObject } from "../k8s/mod.ts";
import { type SecretObject, ServiceMirrorController } from "./controller.ts";
import { FakeMirrorApi } from "./fake_mirror_api.ts";
import { Annotations, Labels, type LinkObject } from "./link.ts";
import { ServiceMirrorMetrics } from "./metrics.ts";
import type { Endpoints, Service } from "./mirror_objects.ts";

const KUBECONFIG = `apiVersion: v1
kind: Config
clusters: [{name: east, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: east, user: u}}]
current-context: c
`;

async function until(what: string, cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

function svc(name: string, ns: string, labels: Record<string, string>): Service {
  return { metadata: { name, namespace: ns, labels }, spec: { ports: [{ name: "http", port: 80 }] } };
}

const linkObj: LinkObject = {
  metadata: { name: "east", namespace: "weft-multicluster" },
  spec: {
    targetClusterName: "east",
    gatewayAddress: "10.0.0.9",
    gatewayPort: "30143",
    gatewayIdentity: "gw.id",
    probeSpec: { port: "1", period: "1h" },
  },
};

Deno.test("controller: resync deletes orphans, follows remote changes, cleans up when the Link goes", async () => {
  const api = new FakeMirrorApi();
  // An orphan from an earlier run: its remote service no longer exists.
  api.services.put(
    svc("gone-east", "shop", { [Labels.mirroredService]: "true", [Labels.clusterName]: "east" }),
  );
  const links = new FakeEventSource<LinkObject>();
  const remote = new FakeEventSource<Service>();
  const remoteEps = new FakeEventSource<Endpoints>();
  const namespaces = new FakeEventSource<KubeObject>();
  const local = new FakeEventSource<Service>();
  namespaces.apply({ metadata: { name: "shop" } });
  remote.apply(svc("web", "shop", { [Labels.exported]: "true" }));
  remote.apply(svc("fed", "shop", { [Labels.federated]: "member" }));
  remote.apply(svc("plain", "shop", {}));
  local.apply(svc("fed", "shop", { [Labels.federated]: "member" }));
  links.apply(linkObj);
  const secrets = new FakeEventSource<SecretObject>();
  const secret = (kubeconfig: string): SecretObject => ({
    metadata: { name: "cluster-credentials-east", namespace: "weft-multicluster" },
    type: "mirror.linkerd.io/remote-kubeconfig",
    data: { kubeconfig: btoa(kubeconfig) },
  });
  secrets.apply(secret(KUBECONFIG));
  let sessions = 0;
  const registry = new Registry();
  const c = new ServiceMirrorController({
    linkName: "east",
    namespace: "weft-multicluster",
    api,
    linkSource: links,
    secretSource: secrets,
    sources: () => {
      sessions++;
      return {
        remoteServices: remote,
        remoteEndpoints: remoteEps,
        localNamespaces: namespaces,
        localFederated: local,
      };
    },
    metrics: new ServiceMirrorMetrics(registry),
    log: () => {},
    gatewayIps: () => Promise.resolve(["10.0.0.9"]),
    fetch: () => Promise.resolve(new Response("ok")),
  });
  const stop = new AbortController();
  const running = c.run(stop.signal);
  try {
    await until("ready", () => c.ready() === undefined);
    assert.equal(sessions, 1);
    assert.equal(api.services.peek("shop", "gone-east"), undefined, "orphan removed by the first resync");
    assert.ok(api.services.peek("shop", "web-east"));
    assert.equal(api.services.peek("shop", "plain-east"), undefined);
    const fed = api.services.peek("shop", "fed-federated")!;
    assert.equal(fed.metadata.annotations?.[Annotations.remoteDiscovery], "fed@east");
    assert.equal(fed.metadata.annotations?.[Annotations.localDiscovery], "fed");
    const text = await registry.metrics();
    assert.match(text, /service_mirror_mirrored_services\{target_cluster_name="east",mode="gateway"\} 1/);
    assert.match(text, /service_mirror_mirrored_services\{target_cluster_name="east",mode="federated"\} 1/);

    // The remote service loses its last ready endpoint: the gateway mirror's Endpoints empty, and fill again.
    assert.equal(api.endpoints.peek("shop", "web-east")?.subsets?.[0].addresses?.[0].ip, "10.0.0.9");
    const remoteEp = (ready: boolean): Endpoints => ({
      metadata: { name: "web", namespace: "shop" },
      subsets: [{
        [ready ? "addresses" : "notReadyAddresses"]: [{ ip: "10.112.7.7" }],
        ports: [{ port: 8080 }],
      }],
    });
    remoteEps.apply(remoteEp(false));
    await until(
      "mirror endpoints emptied",
      () => api.endpoints.peek("shop", "web-east")?.subsets?.length === 0,
    );
    remoteEps.apply(remoteEp(true));
    await until(
      "mirror endpoints filled",
      () => api.endpoints.peek("shop", "web-east")?.subsets?.length === 1,
    );

    // The local member leaves: local discovery goes.
    local.delete("shop", "fed");
    await until(
      "local discovery removed",
      () =>
        api.services.peek("shop", "fed-federated")?.metadata.annotations?.[Annotations.localDiscovery] ===
          undefined,
    );
    // Exported later, and unexported.
    remote.apply(svc("plain", "shop", { [Labels.exported]: "remote-discovery" }));
    await until("flat mirror", () => api.services.peek("shop", "plain-east") !== undefined);
    remote.apply(svc("web", "shop", {}));
    await until("mirror deleted on unexport", () => api.services.peek("shop", "web-east") === undefined);

    // A changed Link (new gateway address) restarts the session; endpoints follow.
    remote.apply(svc("web", "shop", { [Labels.exported]: "true" }));
    await until("re-exported", () => api.endpoints.peek("shop", "web-east") !== undefined);
    links.apply({ ...linkObj, spec: { ...linkObj.spec, gatewayIdentity: "gw2.id" } });
    await until(
      "identity updated",
      () =>
        api.endpoints.peek("shop", "web-east")?.metadata.annotations?.[Annotations.remoteGatewayIdentity] ===
          "gw2.id",
    );

    assert.equal(sessions, 2);
    // New credentials restart the session too.
    secrets.apply(secret(KUBECONFIG.replace("127.0.0.1:1", "127.0.0.1:2")));
    await until("session restarted for new credentials", () => sessions === 3);

    links.delete("weft-multicluster", "east");
    await until(
      "all mirrors removed",
      () => api.services.objects.size === 0 && api.endpoints.objects.size === 0,
    );
    assert.match(c.ready() ?? "", /not found/);
  } finally {
    stop.abort();
    await running;
  }
});
