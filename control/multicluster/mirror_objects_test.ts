import assert from "node:assert/strict";
import { Annotations, Labels, LinkError, parseLink, selectorString } from "./link.ts";
import {
  addEntry,
  classify,
  desiredMirrorEndpoints,
  desiredMirrorService,
  federatedWithMember,
  federatedWithoutMember,
  remoteNameOf,
  removeEntry,
  type Service,
} from "./mirror_objects.ts";

const link = parseLink({
  metadata: { name: "east", namespace: "weft-multicluster", resourceVersion: "7" },
  spec: {
    targetClusterName: "east",
    gatewayAddress: "10.0.0.9",
    gatewayPort: "30143",
    gatewayIdentity: "weft-gateway.weft-multicluster.serviceaccount.identity.weft.cluster.local",
  },
});

function remote(labels: Record<string, string>, extra: Partial<Service["metadata"]> = {}): Service {
  return {
    metadata: { name: "web", namespace: "shop", resourceVersion: "42", labels, ...extra },
    spec: {
      clusterIP: "10.112.0.5",
      ports: [
        { name: "http", port: 80, targetPort: 8080, protocol: "TCP", nodePort: 31000 },
        { name: "grpc", port: 9090, protocol: "TCP" },
      ],
    },
  };
}

Deno.test("parseLink fills Linkerd's defaults and reads string ports and Go durations", () => {
  assert.equal(link.gatewayPort, 30143);
  assert.deepEqual(link.probeSpec, { path: "/ready", port: 30191, periodMs: 3000 });
  assert.equal(link.clusterCredentialsSecret, "cluster-credentials-east");
  assert.equal(link.targetClusterDomain, "cluster.local");
  assert.equal(selectorString(link.selector), "mirror.linkerd.io/exported=true");
  assert.equal(selectorString(link.federatedServiceSelector), "mirror.linkerd.io/federated=member");
  const l = parseLink({
    metadata: { name: "x" },
    spec: { targetClusterName: "x", probeSpec: { port: 4191, period: "1m30s", path: "/live" } },
  });
  assert.deepEqual(l.probeSpec, { path: "/live", port: 4191, periodMs: 90_000 });
  assert.equal(l.gatewayPort, 0, "no gateway: flat-only link");
  assert.throws(() => parseLink({ metadata: { name: "y" }, spec: {} }), LinkError);
  assert.throws(
    () =>
      parseLink({
        metadata: { name: "y" },
        spec: { targetClusterName: "y", gatewayAddress: "a", gatewayPort: "x" },
      }),
    LinkError,
  );
  assert.throws(
    () =>
      parseLink({
        metadata: { name: "y" },
        spec: { targetClusterName: "y", selector: { matchExpressions: [{ key: "a", operator: "Near" }] } },
      }),
    /spec.selector: selector operator Near/,
  );
  assert.equal(
    selectorString({
      matchExpressions: [{ key: "a", operator: "In", values: ["1", "2"] }, { key: "b", operator: "Exists" }],
    }),
    "a in (1,2),b",
  );
});

Deno.test("classify: remote discovery, gateway and federated selectors", () => {
  assert.deepEqual(classify(remote({ [Labels.exported]: "true" }), link), {
    mode: "gateway",
    federated: false,
  });
  assert.deepEqual(classify(remote({ [Labels.exported]: "remote-discovery" }), link), {
    mode: "flat",
    federated: false,
  });
  assert.deepEqual(classify(remote({ [Labels.federated]: "member" }), link), {
    mode: undefined,
    federated: true,
  });
  assert.deepEqual(classify(remote({ app: "web" }), link), { mode: undefined, federated: false });
  // An empty selector exports nothing (as Linkerd), never everything.
  const empty = { ...link, selector: {}, remoteDiscoverySelector: { matchLabels: {} } };
  assert.deepEqual(classify(remote({ app: "web" }), empty), { mode: undefined, federated: false });
});

Deno.test("gateway mirror Service and Endpoints carry the contract's labels, annotations and ports", () => {
  const r = remote(
    { [Labels.exported]: "true", app: "web" },
    {
      annotations: {
        "service.kubernetes.io/topology-mode": "Auto",
        "config.linkerd.io/opaque-ports": "9090",
      },
    },
  );
  const svc = desiredMirrorService(r, link, "gateway");
  assert.equal(svc.metadata.name, "web-east");
  assert.equal(svc.metadata.namespace, "shop");
  assert.deepEqual(svc.metadata.labels, {
    app: "web",
    [Labels.mirroredService]: "true",
    [Labels.clusterName]: "east",
  });
  assert.deepEqual(svc.metadata.annotations, {
    "config.linkerd.io/opaque-ports": "9090",
    [Annotations.remoteSvcFqName]: "web.shop.svc.cluster.local",
    [Annotations.remoteResourceVersion]: "42",
  });
  assert.deepEqual(svc.spec, {
    ports: [
      { name: "http", port: 80, targetPort: 8080, protocol: "TCP" },
      { name: "grpc", port: 9090, protocol: "TCP" },
    ],
  });
  const ep = desiredMirrorEndpoints(r, link, ["10.0.0.9"]);
  assert.equal(ep.metadata.name, "web-east");
  assert.equal(ep.metadata.annotations?.[Annotations.remoteGatewayIdentity], link.gatewayIdentity);
  assert.equal(ep.metadata.annotations?.[Annotations.remoteSvcFqName], "web.shop.svc.cluster.local");
  assert.deepEqual(ep.subsets, [{
    addresses: [{ ip: "10.0.0.9" }],
    ports: [{ name: "http", port: 30143, protocol: "TCP" }, { name: "grpc", port: 30143, protocol: "TCP" }],
  }]);
});

Deno.test("flat mirror Service has the remote-discovery labels", () => {
  const svc = desiredMirrorService(remote({ [Labels.exported]: "remote-discovery" }), link, "flat");
  assert.equal(svc.metadata.labels?.[Labels.remoteDiscovery], "east");
  assert.equal(svc.metadata.labels?.[Labels.remoteService], "web");
  assert.equal(
    svc.metadata.labels?.[Labels.exported],
    undefined,
    "mirror.linkerd.io/* labels are not copied",
  );
});

Deno.test("discovery lists: add once, remove only the given entry", () => {
  assert.equal(addEntry(undefined, "web@east"), "web@east");
  assert.equal(addEntry("web@north", "web@east"), "web@north,web@east");
  assert.equal(addEntry("web@north,web@east", "web@east"), "web@north,web@east");
  assert.equal(removeEntry("web@north,web@east", "web@east"), "web@north");
  assert.equal(removeEntry("web@east", "web@east"), "");
  assert.equal(remoteNameOf("web-east", "east"), "web");
  assert.equal(remoteNameOf("web-eastern", "east"), undefined);
  assert.equal(remoteNameOf("-east", "east"), undefined);
});

Deno.test("federated Service: created, merged with other links, local discovery, left", () => {
  const r = remote({ [Labels.federated]: "member" });
  const created = federatedWithMember(undefined, r, link, false);
  assert.equal(created.metadata.name, "web-federated");
  assert.equal(created.metadata.annotations?.[Annotations.remoteDiscovery], "web@east");
  assert.equal(created.metadata.annotations?.[Annotations.localDiscovery], undefined);
  assert.equal(created.metadata.labels?.[Labels.mirroredService], "true");
  assert.equal(created.metadata.labels?.[Labels.federated], undefined);
  const other: Service = {
    ...created,
    metadata: { ...created.metadata, annotations: { [Annotations.remoteDiscovery]: "web@north" } },
  };
  const merged = federatedWithMember(other, r, link, true);
  assert.equal(merged.metadata.annotations?.[Annotations.remoteDiscovery], "web@north,web@east");
  assert.equal(merged.metadata.annotations?.[Annotations.localDiscovery], "web");
  const left = federatedWithoutMember(merged, "web", "east", true);
  assert.ok(!left.delete);
  assert.equal(left.service.metadata.annotations?.[Annotations.remoteDiscovery], "web@north");
  // Unknown local membership (cleanup mode) keeps what is there.
  const kept = federatedWithoutMember(merged, "web", "north", undefined);
  assert.ok(!kept.delete);
  assert.equal(kept.service.metadata.annotations?.[Annotations.localDiscovery], "web");
  const last = federatedWithoutMember(created, "web", "east", false);
  assert.ok(last.delete, "no member left: the federated service goes");
});
