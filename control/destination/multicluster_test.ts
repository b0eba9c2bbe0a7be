/**
 * Multicluster Get (issue 23) over fake sources: gateway-mode mirror endpoints, flat-mode
 * remote discovery through the credentials-Secret cluster store, and federated unions.
 */
import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import type { WeightedAddr } from "./endpoints.ts";
import type { Update } from "./frame.ts";
import { fromTcpAddress } from "../../proto/ip.ts";
import type { KubeObject } from "../k8s/mod.ts";
import { Multicluster } from "./multicluster_names.ts";
import { credentialsSecret, Fixture, kubeconfigText, pod, service, slice, type Stream } from "./testing.ts";

const EAST = "https://east.example:6443";
const NORTH = "https://north.example:6443";

function describe(u: Update): string {
  switch (u.update?.$case) {
    case "add":
      return `add ${u.update.value.addrs.map((a) => fromTcpAddress(a.addr!)).sort().join(",")}`;
    case "remove":
      return `remove ${u.update.value.addrs.map((a) => fromTcpAddress(a)).sort().join(",")}`;
    case "noEndpoints":
      return `noEndpoints(${u.update.value.exists})`;
    default:
      return "none";
  }
}

function added(u: Update): Map<string, WeightedAddr> {
  assert.equal(u.update?.$case, "add", describe(u));
  return new Map(
    (u.update as { value: { addrs: WeightedAddr[] } }).value.addrs.map((a) => [fromTcpAddress(a.addr!), a]),
  );
}

async function next(s: Stream<Update>): Promise<string> {
  return describe(await s.next());
}

/** Nothing more arrives within `ms`. */
async function noMore(s: Stream<Update>, ms = 150): Promise<void> {
  const n = s.received.length;
  await new Promise((r) => setTimeout(r, ms));
  assert.deepEqual(s.received.slice(n).map(describe), []);
}

function identityOf(a: WeightedAddr): string | undefined {
  const st = a.tlsIdentity?.strategy;
  return st?.$case === "dnsLikeIdentity" ? st.value.name : undefined;
}

/** A remote cluster's objects: a Service `name` with meshed pods at `ips` (SA `sa`). */
function remoteService(
  f: Fixture,
  server: string,
  ns: string,
  name: string,
  ips: string[],
  sa = "web",
): void {
  const r = (plural: string, o: KubeObject) => f.remote(server, plural).apply(o);
  r("namespaces", { metadata: { name: ns } });
  r("services", service(ns, name, [{ name: "http", port: 80 }]));
  ips.forEach((ip, i) => r("pods", pod(ns, `${name}-${i}`, ip, { meshed: true, sa })));
  r("endpointslices", slice(ns, name, ips.map((ip, i) => ({ ip, pod: `${name}-${i}` }))));
}

function mirror(
  ns: string,
  name: string,
  labels: Record<string, string>,
  annotations?: Record<string, string>,
) {
  const s = service(ns, name, [{ name: "http", port: 80 }], {}, annotations);
  s.metadata.labels = labels;
  return s;
}

/** Waits until cluster `name`'s informers hold its Service `ns/svc` with `pods` pods (remoteService's). */
async function remoteSettled(f: Fixture, name: string, svc = "web", pods = 1, ns = "ns"): Promise<void> {
  const until = Date.now() + 3000;
  for (;;) {
    const st = f.clusters.get(name)?.state;
    const ready = st && st.unsynced().length === 0 && st.services.get(ns, svc) &&
      st.endpointSlices.get(ns, `${svc}-abc`) &&
      Array.from({ length: pods }, (_, i) => st.pods.get(ns, `${svc}-${i}`)).every((p) => p);
    if (ready) return;
    if (Date.now() > until) throw new Error(`cluster ${name} never caught up with its fakes`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

async function fixture(): Promise<Fixture> {
  const f = new Fixture();
  f.apply("namespaces", { metadata: { name: "ns" } });
  return await f.start();
}

Deno.test("gateway mirror: identity, authority override and opaque transport from the slice's annotations, no h2", async () => {
  const f = await fixture();
  try {
    f.apply("services", mirror("ns", "web-east", { "mirror.linkerd.io/mirrored-service": "true" }));
    const gw = "weft-gateway.weft-multicluster.serviceaccount.identity.weft.cluster.local";
    const s = slice("ns", "web-east", [{ ip: "172.18.0.5" }], [{ name: "http", port: 30143 }]);
    s.metadata.annotations = {
      [Multicluster.remoteGatewayIdentityAnnotation]: gw,
      [Multicluster.remoteSvcFqNameAnnotation]: "web.ns.svc.cluster.local",
    };
    f.apply("endpointslices", s);
    const stream = f.get("web-east.ns.svc.cluster.local:80");
    const a = added(await stream.next()).get("172.18.0.5:30143")!;
    assert.equal(identityOf(a), gw);
    assert.deepEqual(a.tlsIdentity?.serverName, { name: gw });
    assert.deepEqual(a.authorityOverride, { authorityOverride: "web.ns.svc.cluster.local:80" });
    assert.deepEqual(a.protocolHint, { protocol: undefined, opaqueTransport: { inboundPort: 30143 } });
    stream.cancel();

    // The annotations on the Service serve when the slice has none (a mirror that writes them there).
    f.apply(
      "services",
      mirror("ns", "api-east", {}, {
        [Multicluster.remoteGatewayIdentityAnnotation]: gw,
        [Multicluster.remoteSvcFqNameAnnotation]: "api.ns.svc.cluster.local",
      }),
    );
    f.apply(
      "endpointslices",
      slice("ns", "api-east", [{ ip: "172.18.0.5" }], [{ name: "http", port: 30143 }]),
    );
    const s2 = f.get("api-east.ns.svc.cluster.local:80");
    const b = added(await s2.next()).get("172.18.0.5:30143")!;
    assert.equal(identityOf(b), gw);
    assert.equal(b.authorityOverride?.authorityOverride, "api.ns.svc.cluster.local:80");
    s2.cancel();

    // GetProfile on the mirror: a default profile, no crash.
    const p = f.profile("web-east.ns.svc.cluster.local:80");
    const prof = await p.next();
    assert.equal(prof.fullyQualifiedName, "web-east.ns.svc.cluster.local");
    p.cancel();
  } finally {
    await f.stop();
  }
});

Deno.test("remote discovery: endpoints of the remote Service with the remote trust domain; unknown cluster NotFound", async () => {
  const f = await fixture();
  try {
    f.apply("secrets", credentialsSecret("east", kubeconfigText(EAST), { trustDomain: "east.example" }));
    remoteService(f, EAST, "ns", "web", ["10.245.0.1", "10.245.0.2"], "api");
    await remoteSettled(f, "east", "web", 2);
    const labels = { [Multicluster.remoteDiscoveryLabel]: "east", [Multicluster.remoteServiceLabel]: "web" };
    f.apply("services", mirror("ns", "web-east", labels));
    const s = f.get("web-east.ns.svc.cluster.local:80");
    const set = added(await s.next());
    assert.deepEqual([...set.keys()].sort(), ["10.245.0.1:8080", "10.245.0.2:8080"]);
    const a = set.get("10.245.0.1:8080")!;
    assert.equal(identityOf(a), "api.ns.serviceaccount.identity.linkerd.east.example");
    assert.deepEqual(a.protocolHint, {
      protocol: { $case: "h2", value: {} },
      opaqueTransport: { inboundPort: 4143 },
    });
    assert.equal(a.authorityOverride, undefined);

    // Remote changes stream through.
    f.remote(EAST, "endpointslices").apply(slice("ns", "web", [{ ip: "10.245.0.2", pod: "web-1" }]));
    assert.equal(await next(s), "remove 10.245.0.1:8080");

    // The Secret goes: the cluster's endpoints are removed; it comes back: they are added again.
    f.fake("secrets").delete("linkerd", "cluster-credentials-east");
    assert.equal(await next(s), "remove 10.245.0.2:8080");
    f.apply("secrets", credentialsSecret("east", kubeconfigText(EAST), { trustDomain: "east.example" }));
    assert.equal(await next(s), "add 10.245.0.2:8080");
    s.cancel();

    const unknown = f.get("nowhere.ns.svc.cluster.local:80");
    f.apply("services", mirror("ns", "nowhere", { ...labels, [Multicluster.remoteDiscoveryLabel]: "west9" }));
    const u2 = f.get("nowhere.ns.svc.cluster.local:80");
    assert.equal((await u2.status).code, grpc.status.NOT_FOUND);
    assert.match((await u2.status).details, /Remote cluster not found: west9/);
    await unknown.status;
    f.apply("services", mirror("ns", "half", { [Multicluster.remoteDiscoveryLabel]: "east" }));
    assert.equal((await f.get("half.ns.svc.cluster.local:80").status).code, grpc.status.FAILED_PRECONDITION);
  } finally {
    await f.stop();
  }
});

Deno.test("cluster store: a bad kubeconfig is logged by Secret name and the other clusters keep serving; a changed one moves streams", async () => {
  const f = await fixture();
  try {
    f.apply("secrets", credentialsSecret("east", kubeconfigText(EAST)));
    f.apply("secrets", credentialsSecret("north", "not: [a kubeconfig", { name: "creds-north" }));
    remoteService(f, EAST, "ns", "web", ["10.245.0.1"]);
    remoteService(f, NORTH, "ns", "web", ["10.246.0.1"]);
    await remoteSettled(f, "east");
    assert.ok(f.logs.some((l) => l.includes("linkerd/creds-north")), f.logs.join("\n"));
    assert.equal(f.clusters.get("north"), undefined);
    f.apply(
      "services",
      mirror("ns", "web-x", {
        [Multicluster.remoteDiscoveryLabel]: "east",
        [Multicluster.remoteServiceLabel]: "web",
      }),
    );
    const s = f.get("web-x.ns.svc.cluster.local:80");
    assert.equal(await next(s), "add 10.245.0.1:8080");
    // The "east" Secret now points at another API server: the stream follows the new cluster.
    f.apply("secrets", credentialsSecret("east", kubeconfigText(NORTH)));
    const got = [await next(s), await next(s)].sort();
    assert.deepEqual(got, ["add 10.246.0.1:8080", "remove 10.245.0.1:8080"]);
    // Moved again, to a server with the same endpoints (credentials rotated): nothing is resent.
    remoteService(f, "https://north-2.example:6443", "ns", "web", ["10.246.0.1"]);
    f.apply("secrets", credentialsSecret("east", kubeconfigText("https://north-2.example:6443")));
    await noMore(s, 300);
    // An edit that breaks the kubeconfig keeps the cluster serving what it had.
    f.apply("secrets", credentialsSecret("east", "]["));
    await new Promise((r) => setTimeout(r, 50));
    assert.ok(f.clusters.get("east"));
    const before = s.received.length;
    f.remote("https://north-2.example:6443", "endpointslices").apply(slice("ns", "web", []));
    assert.equal(await next(s), "remove 10.246.0.1:8080");
    assert.equal(s.received.length, before + 1);
    s.cancel();
  } finally {
    await f.stop();
  }
});

Deno.test("federated: union of local and remote members; annotation edits and a member's endpoints going away send removes", async () => {
  const f = await fixture();
  try {
    f.apply("secrets", credentialsSecret("east", kubeconfigText(EAST)));
    f.apply("secrets", credentialsSecret("north", kubeconfigText(NORTH)));
    remoteService(f, EAST, "ns", "web", ["10.245.0.1"]);
    remoteService(f, NORTH, "ns", "web", ["10.246.0.1", "10.246.0.2"]);
    f.apply("services", service("ns", "web", [{ name: "http", port: 80 }]));
    f.apply("pods", pod("ns", "web-l", "10.244.0.1", { meshed: true }));
    f.apply("endpointslices", slice("ns", "web", [{ ip: "10.244.0.1", pod: "web-l" }]));
    await remoteSettled(f, "east");
    await remoteSettled(f, "north", "web", 2);
    const fed = (remote: string, local?: string) =>
      service("ns", "web-federated", [{ name: "http", port: 80 }], {}, {
        [Multicluster.remoteDiscoveryAnnotation]: remote,
        ...(local ? { [Multicluster.localDiscoveryAnnotation]: local } : {}),
      });
    f.apply("services", fed("web@east,web@north", "web"));
    const s = f.get("web-federated.ns.svc.cluster.local:80");
    const first = await s.next();
    assert.deepEqual([...added(first).keys()].sort(), [
      "10.244.0.1:8080",
      "10.245.0.1:8080",
      "10.246.0.1:8080",
      "10.246.0.2:8080",
    ]);
    assert.deepEqual(first.update?.$case === "add" && first.update.value.metricLabels, {
      service: "web-federated",
      namespace: "ns",
    });
    assert.equal(
      identityOf(added(first).get("10.245.0.1:8080")!),
      "web.ns.serviceaccount.identity.linkerd.cluster.local",
    );

    // north leaves the annotation.
    f.apply("services", fed("web@east", "web"));
    assert.equal(await next(s), "remove 10.246.0.1:8080,10.246.0.2:8080");
    // east's endpoints all go away: only they are removed; the local member keeps serving.
    f.remote(EAST, "endpointslices").delete("ns", "web-abc");
    assert.equal(await next(s), "remove 10.245.0.1:8080");
    // north joins again, then the local member leaves.
    f.apply("services", fed("web@east, web@north", "web"));
    assert.equal(await next(s), "add 10.246.0.1:8080,10.246.0.2:8080");
    f.apply("services", fed("web@east,web@north"));
    assert.equal(await next(s), "remove 10.244.0.1:8080");
    // east comes back; a cluster not (yet) linked is simply empty.
    f.remote(EAST, "endpointslices").apply(slice("ns", "web", [{ ip: "10.245.0.1", pod: "web-0" }]));
    assert.equal(await next(s), "add 10.245.0.1:8080");
    f.apply("services", fed("web@east,web@north,web@south"));
    await noMore(s);
    f.apply("secrets", credentialsSecret("south", kubeconfigText("https://south.example:6443")));
    remoteService(f, "https://south.example:6443", "ns", "web", ["10.247.0.1"]);
    assert.equal(await next(s), "add 10.247.0.1:8080");
    assert.equal(s.received.length, 7);
    s.cancel();
    // GetProfile on the federated Service and on a flat-mode mirror: a default profile each.
    f.apply(
      "services",
      mirror("ns", "web-east", {
        [Multicluster.remoteDiscoveryLabel]: "east",
        [Multicluster.remoteServiceLabel]: "web",
      }),
    );
    for (const name of ["web-federated", "web-east"]) {
      const p = f.profile(`${name}.ns.svc.cluster.local:80`);
      const prof = await p.next();
      assert.equal(prof.fullyQualifiedName, `${name}.ns.svc.cluster.local`);
      assert.equal(prof.opaqueProtocol, false);
      assert.deepEqual(prof.routes, []);
      p.cancel();
    }
  } finally {
    await f.stop();
  }
});
