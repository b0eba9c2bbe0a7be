import assert from "node:assert/strict";
import * as grpc from "@grpc/grpc-js";
import type { Update, WeightedAddr } from "../../proto/gen/destination.ts";
import { fromTcpAddress } from "../../proto/ip.ts";
import { Fixture, pod, service, slice } from "./testing.ts";

const SVC = "web.ns.svc.cluster.local";

function addrs(u: Update): string[] {
  if (u.update?.$case === "add") return u.update.value.addrs.map((a) => fromTcpAddress(a.addr!)).sort();
  if (u.update?.$case === "remove") return u.update.value.addrs.map((a) => fromTcpAddress(a)).sort();
  return [];
}

function kind(u: Update): string {
  const c = u.update?.$case;
  return c === "noEndpoints" ? `noEndpoints(${u.update!.value.exists})` : c ?? "none";
}

function added(u: Update): Map<string, WeightedAddr> {
  assert.equal(u.update?.$case, "add");
  return new Map(
    (u.update as { value: { addrs: WeightedAddr[] } }).value.addrs.map((a) => [fromTcpAddress(a.addr!), a]),
  );
}

async function fixture(): Promise<Fixture> {
  const f = new Fixture();
  f.apply("namespaces", { metadata: { name: "ns" } });
  f.apply("nodes", { metadata: { name: "node-a", labels: { "topology.kubernetes.io/zone": "zone-a" } } });
  f.apply("nodes", { metadata: { name: "node-b", labels: { "topology.kubernetes.io/zone": "zone-b" } } });
  f.apply("replicasets", {
    metadata: {
      name: "web-h4sh",
      namespace: "ns",
      ownerReferences: [{
        apiVersion: "apps/v1",
        kind: "Deployment",
        name: "web",
        uid: "d",
        controller: true,
      }],
    },
  });
  return await f.start();
}

Deno.test("Get: first message is the full set with port-name resolution, identities, hints and labels; then deltas", async () => {
  const f = await fixture();
  try {
    f.apply("services", service("ns", "web", [{ name: "http", port: 80 }]));
    f.apply("pods", pod("ns", "web-1", "10.0.0.1", { meshed: true, rs: "web-h4sh", node: "node-a" }));
    f.apply("pods", pod("ns", "web-2", "10.0.0.2", { meshed: "native", sa: "other", node: "node-b" }));
    f.apply("pods", pod("ns", "plain", "10.0.0.3", { node: "node-a" }));
    f.apply(
      "endpointslices",
      slice("ns", "web", [{ ip: "10.0.0.1", pod: "web-1" }, { ip: "10.0.0.2", pod: "web-2" }, {
        ip: "10.0.0.3",
        pod: "plain",
      }], [{ name: "metrics", port: 9000 }, { name: "http", port: 8080 }]),
    );
    const s = f.get(`${SVC}:80`, JSON.stringify({ ns: "client", nodeName: "node-a", pod: "c" }));
    const first = await s.next();
    const set = added(first);
    assert.deepEqual([...set.keys()].sort(), ["10.0.0.1:8080", "10.0.0.2:8080", "10.0.0.3:8080"]);
    assert.deepEqual(first.update?.$case === "add" && first.update.value.metricLabels, {
      service: "web",
      namespace: "ns",
    });
    const a = set.get("10.0.0.1:8080")!;
    assert.equal(a.weight, 10000);
    const id = "web.ns.serviceaccount.identity.linkerd.cluster.local";
    assert.deepEqual(a.tlsIdentity, {
      strategy: { $case: "dnsLikeIdentity", value: { name: id } },
      serverName: { name: id },
    });
    assert.deepEqual(a.protocolHint, {
      protocol: { $case: "h2", value: {} },
      opaqueTransport: { inboundPort: 4143 },
    });
    assert.deepEqual(a.metricLabels, {
      pod: "web-1",
      namespace: "ns",
      serviceaccount: "web",
      deployment: "web",
      pod_template_hash: "h4sh",
      zone: "zone-a",
      zone_locality: "local",
      control_plane_ns: "linkerd",
    });
    const b = set.get("10.0.0.2:8080")!;
    assert.equal(
      b.tlsIdentity?.strategy?.$case === "dnsLikeIdentity" && b.tlsIdentity.strategy.value.name,
      "other.ns.serviceaccount.identity.linkerd.cluster.local",
      "native sidecar counts as meshed",
    );
    assert.equal(b.metricLabels.zone_locality, "remote");
    const c = set.get("10.0.0.3:8080")!;
    assert.equal(c.tlsIdentity, undefined, "unmeshed pod has no identity");
    assert.equal(c.protocolHint, undefined);

    // Scale up: only the new address is added.
    f.apply("pods", pod("ns", "web-4", "10.0.0.4", { meshed: true }));
    f.apply(
      "endpointslices",
      slice("ns", "web", [{ ip: "10.0.0.1", pod: "web-1" }, { ip: "10.0.0.2", pod: "web-2" }, {
        ip: "10.0.0.3",
        pod: "plain",
      }, { ip: "10.0.0.4", pod: "web-4" }], [{ name: "http", port: 8080 }]),
    );
    const up = await s.next();
    assert.deepEqual([kind(up), addrs(up)], ["add", ["10.0.0.4:8080"]]);
    // Scale down: removes.
    f.apply(
      "endpointslices",
      slice("ns", "web", [{ ip: "10.0.0.1", pod: "web-1" }], [{ name: "http", port: 8080 }]),
    );
    const down = await s.next();
    assert.deepEqual([kind(down), addrs(down)], ["remove", [
      "10.0.0.2:8080",
      "10.0.0.3:8080",
      "10.0.0.4:8080",
    ]]);
    // A changed pod (identity) is re-sent as an add (upsert).
    f.apply(
      "pods",
      pod("ns", "web-1", "10.0.0.1", { meshed: true, sa: "renamed", rs: "web-h4sh", node: "node-a" }),
    );
    const changed = await s.next();
    assert.deepEqual([kind(changed), addrs(changed)], ["add", ["10.0.0.1:8080"]]);
    // The Service disappears.
    f.fake("services").delete("ns", "web");
    assert.equal(kind(await s.next()), "noEndpoints(false)");
    s.cancel();
  } finally {
    await f.stop();
  }
});

Deno.test("Get: NoEndpoints{exists:true} when the Service has none; errors for unknown, IP, ExternalName, bad paths", async () => {
  const f = await fixture();
  try {
    f.apply("services", service("ns", "empty"));
    f.apply("services", service("ns", "ext", [], { type: "ExternalName", externalName: "example.org" }));
    const s = f.get("empty.ns.svc.cluster.local");
    assert.equal(kind(await s.next()), "noEndpoints(true)");
    // Without a matching slice port name the slice contributes nothing.
    f.apply("endpointslices", slice("ns", "empty", [{ ip: "10.1.0.1" }], [{ name: "other", port: 1 }]));
    f.apply(
      "endpointslices",
      slice("ns", "empty", [{ ip: "10.1.0.2" }], [{ name: "http", port: 8080 }], "empty-2"),
    );
    const u = await s.next();
    assert.deepEqual([kind(u), addrs(u)], ["add", ["10.1.0.2:8080"]]);
    s.cancel();
    const cases: [string, grpc.status, RegExp][] = [
      ["nope.ns.svc.cluster.local:80", grpc.status.NOT_FOUND, /Service ns\/nope not found/],
      ["10.0.0.1:80", grpc.status.INVALID_ARGUMENT, /IP queries are not supported/],
      ["ext.ns.svc.cluster.local:80", grpc.status.INVALID_ARGUMENT, /ExternalName/],
      ["web.ns.svc.other.domain:80", grpc.status.INVALID_ARGUMENT, /Invalid authority/],
      ["web.ns.svc.cluster.local:99999", grpc.status.INVALID_ARGUMENT, /Invalid port/],
    ];
    for (const [path, code, re] of cases) {
      const st = await f.get(path).status;
      assert.equal(st.code, code, path);
      assert.match(st.details, re);
    }
    assert.match(await f.metric("grpc_server_handled_total"), /grpc_code="NOT_FOUND"/);
  } finally {
    await f.stop();
  }
});

Deno.test("Get: serving-but-terminating endpoints are used only while none is ready; hostname filter", async () => {
  const f = await fixture();
  try {
    f.apply("services", service("ns", "web"));
    f.apply(
      "endpointslices",
      slice("ns", "web", [{ ip: "10.0.0.1", ready: false, serving: true, hostname: "web-0" }, {
        ip: "10.0.0.2",
        ready: false,
        serving: false,
        hostname: "web-1",
      }]),
    );
    const s = f.get(`${SVC}:80`);
    assert.deepEqual(addrs(await s.next()), ["10.0.0.1:8080"]);
    const h = f.get(`web-1.${SVC}:80`);
    assert.equal(kind(await h.next()), "noEndpoints(true)", "web-1 is neither ready nor serving");
    f.apply(
      "endpointslices",
      slice("ns", "web", [{ ip: "10.0.0.1", ready: false, serving: true, hostname: "web-0" }, {
        ip: "10.0.0.3",
        ready: true,
        hostname: "web-1",
      }]),
    );
    const r = await s.next();
    const a = await s.next();
    assert.deepEqual([kind(r), addrs(r), kind(a), addrs(a)], ["remove", ["10.0.0.1:8080"], "add", [
      "10.0.0.3:8080",
    ]]);
    assert.deepEqual(addrs(await h.next()), ["10.0.0.3:8080"]);
    s.cancel();
    h.cancel();
  } finally {
    await f.stop();
  }
});

Deno.test("Get: opaque ports from the pod annotation (named port) and a Server with proxyProtocol opaque", async () => {
  const f = await fixture();
  try {
    f.apply("services", service("ns", "db", [{ name: "db", port: 5433 }, { name: "http", port: 80 }]));
    f.apply(
      "pods",
      pod("ns", "db-1", "10.0.1.1", {
        meshed: true,
        annotations: { "config.linkerd.io/opaque-ports": "db" },
      }),
    );
    f.apply("pods", pod("ns", "db-2", "10.0.1.2", { meshed: true, labels: { app: "db2" } }));
    f.apply(
      "endpointslices",
      slice("ns", "db", [{ ip: "10.0.1.1", pod: "db-1" }, { ip: "10.0.1.2", pod: "db-2" }], [{
        name: "db",
        port: 5433,
      }, { name: "http", port: 8080 }]),
    );
    const s = f.get("db.ns.svc.cluster.local:5433");
    const set = added(await s.next());
    assert.deepEqual(set.get("10.0.1.1:5433")!.protocolHint, {
      protocol: { $case: "opaque", value: {} },
      opaqueTransport: { inboundPort: 4143 },
    });
    assert.equal(set.get("10.0.1.2:5433")!.protocolHint?.protocol?.$case, "h2");
    f.apply(
      "servers",
      {
        metadata: { name: "db2", namespace: "ns" },
        spec: { podSelector: { matchLabels: { app: "db2" } }, port: "db", proxyProtocol: "opaque" },
      } as never,
    );
    const u = added(await s.next());
    assert.deepEqual([...u.keys()], ["10.0.1.2:5433"]);
    assert.equal(u.get("10.0.1.2:5433")!.protocolHint?.protocol?.$case, "opaque");
    s.cancel();
  } finally {
    await f.stop();
  }
});

Deno.test("Get: zone hints are honoured only when all endpoints have them; internalTrafficPolicy Local keeps node-local ones", async () => {
  const f = await fixture();
  try {
    f.apply("services", service("ns", "web"));
    f.apply(
      "endpointslices",
      slice("ns", "web", [
        { ip: "10.0.0.1", zone: "zone-a", forZones: ["zone-a"], nodeName: "node-a" },
        { ip: "10.0.0.2", zone: "zone-b", forZones: ["zone-b"], nodeName: "node-b" },
      ]),
    );
    const inA = f.get(`${SVC}:80`, JSON.stringify({ ns: "c", nodeName: "node-a" }));
    const inB = f.get(`${SVC}:80`, JSON.stringify({ ns: "c", nodeName: "node-b" }));
    const nowhere = f.get(`${SVC}:80`);
    assert.deepEqual(addrs(await inA.next()), ["10.0.0.1:8080"]);
    assert.deepEqual(addrs(await inB.next()), ["10.0.0.2:8080"]);
    assert.deepEqual(addrs(await nowhere.next()), ["10.0.0.1:8080", "10.0.0.2:8080"]);
    // One endpoint without hints turns zone filtering off.
    f.apply(
      "endpointslices",
      slice("ns", "web", [
        { ip: "10.0.0.1", zone: "zone-a", forZones: ["zone-a"], nodeName: "node-a" },
        { ip: "10.0.0.2", zone: "zone-b", forZones: ["zone-b"], nodeName: "node-b" },
        { ip: "10.0.0.3", zone: "zone-b", nodeName: "node-b" },
      ]),
    );
    assert.deepEqual(addrs(await inA.next()), ["10.0.0.2:8080", "10.0.0.3:8080"]);
    f.apply("services", service("ns", "web", undefined, { internalTrafficPolicy: "Local" }));
    const r = await inA.next();
    assert.deepEqual([kind(r), addrs(r)], ["remove", ["10.0.0.2:8080", "10.0.0.3:8080"]]);
    assert.match(await f.metric("endpoint_views_active"), / 3$/m, "one shared view per client node");
    for (const s of [inA, inB, nowhere]) s.cancel();
  } finally {
    await f.stop();
  }
});

Deno.test("a client that never reads is reset on overflow and does not delay other streams", async () => {
  const f = new Fixture();
  await f.start({ streamQueueCapacity: 4, streamSendTimeoutMs: 60_000 });
  try {
    f.apply("services", service("ns", "web"));
    const eps = () =>
      Array.from(
        { length: 300 },
        (_, i) => ({ ip: `10.2.${Math.floor(i / 250)}.${(i % 250) + 1}` }),
      );
    // Each generation moves the target port, so every update is a full remove + add (~10 KB).
    f.apply("endpointslices", slice("ns", "web", eps(), [{ name: "http", port: 1000 }]));
    const slow = f.get(`${SVC}:80`);
    slow.call.pause(); // never reads: HTTP/2 flow control fills, then its queue
    const fast = f.get(`${SVC}:80`);
    await fast.next();
    const rounds = 60;
    for (let g = 1; g <= rounds; g++) {
      f.apply("endpointslices", slice("ns", "web", eps(), [{ name: "http", port: 1000 + g }]));
      // The fast client sees every generation while the slow one is stalled.
      const r = await fast.next(10_000);
      const a = await fast.next(10_000);
      assert.deepEqual([kind(r), kind(a), addrs(a)[0].endsWith(`:${1000 + g}`)], ["remove", "add", true]);
    }
    const st = await slow.status;
    assert.notEqual(st.code, grpc.status.OK);
    assert.match(
      await f.metric("endpoint_updates_queue_overflow"),
      /service="web\.ns\.svc\.cluster\.local:80"} 1/,
    );
    fast.cancel();
  } finally {
    await f.stop();
  }
});

Deno.test("GetProfile: default profile, ServiceProfile translation, client-namespace precedence, opaque and endpoint profiles", async () => {
  const f = await fixture();
  try {
    f.apply(
      "services",
      service("ns", "web", [{ name: "http", port: 80 }, { name: "pg", port: 5432 }], {
        clusterIP: "10.96.0.10",
      }),
    );
    const def = await f.profile(`${SVC}:80`).next();
    assert.equal(def.fullyQualifiedName, SVC);
    assert.deepEqual(def.routes, []);
    assert.deepEqual(def.retryBudget, {
      retryRatio: Math.fround(0.2),
      minRetriesPerSecond: 10,
      ttl: { seconds: 10n, nanos: 0 },
    });
    assert.equal(def.opaqueProtocol, false);
    assert.equal((await f.profile(`${SVC}:5432`).next()).opaqueProtocol, true, "default opaque port");

    const s = f.profile(`${SVC}:80`, JSON.stringify({ ns: "client" }));
    await s.next();
    f.apply("serviceprofiles", {
      metadata: { name: SVC, namespace: "ns" },
      spec: {
        routes: [{
          name: "GET /books/{id}",
          condition: { all: [{ method: "GET" }, { pathRegex: "/books/\\d+" }, { not: { method: "BREW" } }] },
          responseClasses: [{ condition: { status: { min: 500, max: 599 } }, isFailure: true }],
          isRetryable: true,
          timeout: "1.5s",
        }, { name: "broken" }],
        retryBudget: { retryRatio: 0.5, minRetriesPerSecond: 3, ttl: "1m" },
        dstOverrides: [{ authority: "web-v2.ns.svc.cluster.local:80", weight: "500m" }, {
          authority: "web.ns.svc.cluster.local:80",
          weight: 1,
        }],
      },
    } as never);
    const p = await s.next();
    assert.equal(p.routes.length, 1, "a route without condition is dropped");
    const r = p.routes[0];
    assert.deepEqual(r.metricsLabels, { route: "GET /books/{id}" });
    assert.equal(r.isRetryable, true);
    assert.deepEqual(r.timeout, { seconds: 1n, nanos: 500_000_000 });
    assert.equal(r.condition?.match?.$case, "all");
    const parts = r.condition?.match?.$case === "all" ? r.condition.match.value.matches : [];
    assert.deepEqual(parts[0], {
      match: { $case: "method", value: { type: { $case: "registered", value: 0 } } },
    });
    assert.deepEqual(parts[1], { match: { $case: "path", value: { regex: "/books/\\d+" } } });
    assert.deepEqual(parts[2].match?.$case === "not" && parts[2].match.value, {
      match: { $case: "method", value: { type: { $case: "unregistered", value: "BREW" } } },
    });
    assert.deepEqual(r.responseClasses, [{
      condition: { match: { $case: "status", value: { min: 500, max: 599 } } },
      isFailure: true,
    }]);
    assert.deepEqual(p.retryBudget, {
      retryRatio: 0.5,
      minRetriesPerSecond: 3,
      ttl: { seconds: 60n, nanos: 0 },
    });
    assert.deepEqual(p.dstOverrides.map((d) => [d.authority, d.weight]), [[
      "web-v2.ns.svc.cluster.local:80",
      5000,
    ], ["web.ns.svc.cluster.local:80", 10000]]);
    // The client namespace's own profile wins.
    f.apply(
      "serviceprofiles",
      { metadata: { name: SVC, namespace: "client" }, spec: { routes: [] } } as never,
    );
    const own = await s.next();
    assert.deepEqual(own.routes, []);
    assert.equal(own.profileRef?.kind?.$case === "resource" && own.profileRef.kind.value.namespace, "client");
    s.cancel();

    // ClusterIP → the service profile; pod IP → an endpoint profile.
    assert.equal((await f.profile("10.96.0.10:80").next()).fullyQualifiedName, SVC);
    f.apply(
      "pods",
      pod("ns", "web-1", "10.0.0.1", {
        meshed: true,
        annotations: { "config.linkerd.io/opaque-ports": "8080" },
      }),
    );
    const ep = await f.profile("10.0.0.1:8080").next();
    assert.equal(ep.opaqueProtocol, true);
    assert.equal(fromTcpAddress(ep.endpoint!.addr!), "10.0.0.1:8080");
    assert.equal(ep.endpoint!.metricLabels.pod, "web-1");
    assert.equal(
      ep.endpoint!.tlsIdentity?.serverName?.name,
      "web.ns.serviceaccount.identity.linkerd.cluster.local",
    );
    const unknown = await f.profile("10.9.9.9:80").next();
    assert.equal(unknown.endpoint?.tlsIdentity, undefined);
  } finally {
    await f.stop();
  }
});
