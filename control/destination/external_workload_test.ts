/**
 * ExternalWorkloads as Service endpoints: Destination.Get over a real grpc-js server, the
 * cluster state fed by fake informer sources.
 */
import assert from "node:assert/strict";
import { fromTcpAddress } from "../../proto/ip.ts";
import type { KubeObject } from "../k8s/mod.ts";
import type { WeightedAddr } from "./endpoints.ts";
import { Fixture, service, slice } from "./testing.ts";

// The message types, through the fixture (generated code is imported only by contract modules).
type Update = Awaited<ReturnType<ReturnType<Fixture["get"]>["next"]>>;

const SVC = "legacy.ns.svc.cluster.local";
const SPIFFE = "spiffe://root.linkerd.cluster.local/vm-a";

function ew(
  name: string,
  ip: string,
  opts: {
    ns?: string;
    labels?: Record<string, string>;
    ready?: boolean;
    ports?: { name?: string; port: number; protocol?: string }[];
    annotations?: Record<string, string>;
  } = {},
): KubeObject {
  return {
    metadata: {
      name,
      namespace: opts.ns ?? "ns",
      labels: opts.labels ?? { app: "legacy" },
      annotations: opts.annotations,
      resourceVersion: String(Math.random()),
    },
    spec: {
      meshTLS: { identity: SPIFFE, serverName: `${name}.ns.external.cluster.local` },
      ports: opts.ports ?? [{ name: "http", port: 8080 }],
      workloadIPs: [{ ip }],
    },
    status: { conditions: [{ type: "Ready", status: opts.ready === false ? "False" : "True" }] },
  } as KubeObject;
}

function legacyService(extra: Record<string, unknown> = {}): KubeObject {
  return service("ns", "legacy", [{ name: "http", port: 80, targetPort: 8080 } as { port: number }], {
    selector: { app: "legacy" },
    clusterIP: "10.96.0.10",
    ...extra,
  });
}

function added(u: Update): Map<string, WeightedAddr> {
  assert.equal(u.update?.$case, "add", `expected add, got ${JSON.stringify(u.update)}`);
  const v = u.update as { value: { addrs: WeightedAddr[] } };
  return new Map(v.value.addrs.map((a) => [fromTcpAddress(a.addr!), a]));
}

function removed(u: Update): string[] {
  assert.equal(u.update?.$case, "remove");
  const v = u.update as { value: { addrs: { ip?: unknown; port: number }[] } };
  return v.value.addrs.map((a) => fromTcpAddress(a as Parameters<typeof fromTcpAddress>[0])).sort();
}

async function fixture(): Promise<Fixture> {
  const f = new Fixture();
  f.apply("namespaces", { metadata: { name: "ns" } });
  return await f.start();
}

Deno.test("ExternalWorkload: a ready workload matching the Service selector is an endpoint with its SPIFFE identity", async () => {
  const f = await fixture();
  try {
    f.apply("services", legacyService());
    f.apply(
      "externalworkloads",
      ew("vm-a", "192.0.2.10", { labels: { app: "legacy", "topology.kubernetes.io/zone": "z1" } }),
    );
    // Same labels, other namespace: a Service selects only in its own namespace.
    f.apply("externalworkloads", ew("vm-x", "192.0.2.99", { ns: "other" }));
    const s = f.get(`${SVC}:80`);
    const set = added(await s.next());
    assert.deepEqual([...set.keys()], ["192.0.2.10:8080"]);
    const a = set.get("192.0.2.10:8080")!;
    assert.equal(a.weight, 10000);
    assert.deepEqual(a.tlsIdentity, {
      strategy: { $case: "uriLikeIdentity", value: { uri: SPIFFE } },
      serverName: { name: "vm-a.ns.external.cluster.local" },
    });
    assert.deepEqual(a.protocolHint, {
      protocol: { $case: "h2", value: {} },
      opaqueTransport: { inboundPort: 4143 },
    });
    assert.deepEqual(a.metricLabels, {
      external_workload: "vm-a",
      namespace: "ns",
      zone: "z1",
      zone_locality: "unknown",
    });
    s.cancel();
  } finally {
    await f.stop();
  }
});

Deno.test("ExternalWorkload: readiness, label and port changes add and remove the address", async () => {
  const f = await fixture();
  try {
    f.apply("services", legacyService());
    f.apply("externalworkloads", ew("vm-a", "192.0.2.10", { ready: false }));
    const s = f.get(`${SVC}:80`);
    assert.equal(
      (await s.next()).update?.$case,
      "noEndpoints",
      "a workload without Ready=True is not served",
    );
    f.apply("externalworkloads", ew("vm-a", "192.0.2.10"));
    assert.deepEqual([...added(await s.next()).keys()], ["192.0.2.10:8080"]);
    f.apply("externalworkloads", ew("vm-a", "192.0.2.10", { labels: { app: "something-else" } }));
    assert.deepEqual(removed(await s.next()), ["192.0.2.10:8080"]);
    f.apply("externalworkloads", ew("vm-a", "192.0.2.10"));
    assert.deepEqual([...added(await s.next()).keys()], ["192.0.2.10:8080"]);
    // The Service targets 8080; a workload that stops declaring it stops being an endpoint.
    f.apply("externalworkloads", ew("vm-a", "192.0.2.10", { ports: [{ port: 9090 }] }));
    assert.deepEqual(removed(await s.next()), ["192.0.2.10:8080"]);
    f.fake("externalworkloads").delete("ns", "vm-a");
    f.apply("externalworkloads", ew("vm-b", "192.0.2.11"));
    assert.deepEqual([...added(await s.next()).keys()], ["192.0.2.11:8080"]);
    s.cancel();
  } finally {
    await f.stop();
  }
});

Deno.test("ExternalWorkload: named target ports, protocols, and Services without a selector", async () => {
  const f = await fixture();
  try {
    f.apply("services", {
      ...legacyService(),
      spec: {
        type: "ClusterIP",
        clusterIP: "10.96.0.10",
        selector: { app: "legacy" },
        ports: [{ name: "web", port: 80, targetPort: "http" }, { name: "dns", port: 53, protocol: "UDP" }],
      },
    } as KubeObject);
    f.apply(
      "externalworkloads",
      ew("vm-a", "192.0.2.10", { ports: [{ name: "http", port: 8081 }, { port: 53 }] }),
    );
    const s = f.get(`${SVC}:80`);
    assert.deepEqual([...added(await s.next()).keys()], ["192.0.2.10:8081"], "targetPort by name");
    // Port 53 is declared as TCP (the default) on the workload, UDP on the Service: no match.
    const dns = f.get(`${SVC}:53`);
    assert.equal((await dns.next()).update?.$case, "noEndpoints");
    f.apply("services", service("ns", "bare", [{ name: "http", port: 80 }]));
    const bare = f.get("bare.ns.svc.cluster.local:80");
    assert.equal((await bare.next()).update?.$case, "noEndpoints", "no selector selects no workload");
    for (const x of [s, dns, bare]) x.cancel();
  } finally {
    await f.stop();
  }
});

Deno.test("ExternalWorkload: opaque by its annotation or by a Server's externalWorkloadSelector, on its proxy port", async () => {
  const f = await fixture();
  try {
    f.apply("services", legacyService());
    f.apply(
      "externalworkloads",
      ew("vm-a", "192.0.2.10", {
        annotations: { "config.linkerd.io/opaque-ports": "http" },
        ports: [{ name: "http", port: 8080 }, { name: "linkerd-proxy", port: 4444 }],
      }),
    );
    const s = f.get(`${SVC}:80`);
    const a = added(await s.next()).get("192.0.2.10:8080")!;
    assert.deepEqual(a.protocolHint, {
      protocol: { $case: "opaque", value: {} },
      opaqueTransport: { inboundPort: 4444 },
    });
    s.cancel();

    f.apply("services", service("ns", "db", [{ name: "pg", port: 5432 }], { selector: { app: "db" } }));
    f.apply(
      "externalworkloads",
      ew("vm-db", "192.0.2.20", { labels: { app: "db" }, ports: [{ port: 5432 }] }),
    );
    const db = f.get("db.ns.svc.cluster.local:5432");
    assert.equal(
      added(await db.next()).get("192.0.2.20:5432")!.protocolHint?.protocol?.$case,
      "opaque",
      "default opaque port",
    );
    f.apply("services", service("ns", "api", [{ name: "http", port: 7000 }], { selector: { app: "api" } }));
    f.apply(
      "externalworkloads",
      ew("vm-api", "192.0.2.30", { labels: { app: "api" }, ports: [{ name: "api", port: 7000 }] }),
    );
    const api = f.get("api.ns.svc.cluster.local:7000");
    assert.equal(added(await api.next()).get("192.0.2.30:7000")!.protocolHint?.protocol?.$case, "h2");
    f.apply("servers", {
      metadata: { name: "api-opaque", namespace: "ns" },
      spec: {
        externalWorkloadSelector: { matchLabels: { app: "api" } },
        port: "api",
        proxyProtocol: "opaque",
      },
    } as KubeObject);
    assert.equal(added(await api.next()).get("192.0.2.30:7000")!.protocolHint?.protocol?.$case, "opaque");
    db.cancel();
    api.cancel();
  } finally {
    await f.stop();
  }
});

Deno.test("ExternalWorkload: slices naming a workload (as Linkerd's controller writes them) use its identity; headless hostnames", async () => {
  const f = await fixture();
  try {
    f.apply("services", service("ns", "web", [{ name: "http", port: 80 }]));
    const s0 = slice("ns", "web", [{ ip: "192.0.2.40" }], [{ name: "http", port: 8080 }]) as KubeObject & {
      endpoints: { targetRef?: unknown }[];
    };
    s0.endpoints[0].targetRef = { kind: "ExternalWorkload", name: "vm-c", namespace: "ns" };
    f.apply("endpointslices", s0);
    const s = f.get("web.ns.svc.cluster.local:80");
    assert.equal((await s.next()).update?.$case, "noEndpoints", "served once the workload is known");
    f.apply("externalworkloads", ew("vm-c", "192.0.2.40", { labels: {} }));
    const a = added(await s.next()).get("192.0.2.40:8080")!;
    assert.equal(a.tlsIdentity?.strategy?.$case, "uriLikeIdentity");
    s.cancel();

    f.apply("services", legacyService({ clusterIP: "None" }));
    f.apply("externalworkloads", ew("vm-a", "192.0.2.10"));
    f.apply("externalworkloads", ew("vm-b", "192.0.2.11"));
    const h = f.get(`vm-b.${SVC}:80`);
    assert.deepEqual([...added(await h.next()).keys()], ["192.0.2.11:8080"]);
    h.cancel();
  } finally {
    await f.stop();
  }
});

Deno.test("ExternalWorkload: GetProfile of a workload's address is its endpoint profile, following the workload", async () => {
  const f = await fixture();
  try {
    f.apply("externalworkloads", ew("vm-a", "192.0.2.10"));
    const p = f.profile("192.0.2.10:8080");
    const first = await p.next();
    assert.equal(first.opaqueProtocol, false);
    assert.deepEqual(first.endpoint?.tlsIdentity?.strategy, {
      $case: "uriLikeIdentity",
      value: { uri: SPIFFE },
    });
    assert.equal(first.endpoint?.metricLabels.external_workload, "vm-a");
    f.apply(
      "externalworkloads",
      ew("vm-a", "192.0.2.10", { annotations: { "config.linkerd.io/opaque-ports": "8080" } }),
    );
    const next = await p.next();
    assert.equal(next.opaqueProtocol, true);
    assert.equal(next.endpoint?.protocolHint?.protocol?.$case, "opaque");
    // An address no pod or workload has: a bare endpoint.
    const bare = await f.profile("192.0.2.99:8080").next();
    assert.equal(bare.endpoint?.tlsIdentity, undefined);
    p.cancel();
  } finally {
    await f.stop();
  }
});
