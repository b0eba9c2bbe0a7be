import assert from "node:assert/strict";
import { FakeMirrorApi } from "./fake_mirror_api.ts";
import { Annotations, Labels, type Link, parseLink } from "./link.ts";
import type { Service } from "./mirror_objects.ts";
import { Reconciler } from "./reconciler.ts";

function makeLink(target: string): Link {
  return parseLink({
    metadata: { name: target, namespace: "weft-multicluster" },
    spec: {
      targetClusterName: target,
      gatewayAddress: "10.0.0.9",
      gatewayPort: 30143,
      gatewayIdentity: `weft-gateway.weft-multicluster.serviceaccount.identity.weft.cluster.local`,
    },
  });
}

interface World {
  api: FakeMirrorApi;
  remote: Map<string, Service>;
  namespaces: Set<string>;
  localMembers: Set<string>;
  logs: string[];
}

function world(): World {
  return {
    api: new FakeMirrorApi(),
    remote: new Map(),
    namespaces: new Set(["shop"]),
    localMembers: new Set(),
    logs: [],
  };
}

function reconciler(w: World, link: Link, remote = w.remote): Reconciler {
  return new Reconciler({
    api: w.api,
    link: () => link,
    remote: (ns, name) => remote.get(`${ns}/${name}`),
    namespaceExists: (ns) => w.namespaces.has(ns),
    localFederatedMember: (ns, name) => w.localMembers.has(`${ns}/${name}`),
    gatewayIps: () => Promise.resolve(["10.0.0.9"]),
    log: (m) => w.logs.push(m),
  });
}

function svc(name: string, labels: Record<string, string>, ns = "shop"): Service {
  return {
    metadata: { name, namespace: ns, resourceVersion: "1", labels },
    spec: { clusterIP: "10.112.0.5", ports: [{ name: "http", port: 80, targetPort: 8080, protocol: "TCP" }] },
  };
}

Deno.test("gateway export: mirror Service and Endpoints; unexport deletes both", async () => {
  const w = world();
  const r = reconciler(w, makeLink("east"));
  w.remote.set("shop/web", svc("web", { [Labels.exported]: "true" }));
  await r.reconcile("shop/web");
  const mirror = w.api.services.peek("shop", "web-east")!;
  assert.equal(mirror.metadata.labels?.[Labels.clusterName], "east");
  assert.equal(mirror.metadata.annotations?.[Annotations.remoteSvcFqName], "web.shop.svc.cluster.local");
  const ep = w.api.endpoints.peek("shop", "web-east")!;
  assert.deepEqual(ep.subsets?.[0].addresses, [{ ip: "10.0.0.9" }]);
  assert.equal(ep.subsets?.[0].ports?.[0].port, 30143);
  assert.deepEqual(r.counts(), { gateway: 1, flat: 0, federated: 0 });

  // Reconciling again with nothing changed writes nothing.
  const writes = w.api.services.calls.update + w.api.services.calls.create;
  await r.reconcile("shop/web");
  assert.equal(w.api.services.calls.update + w.api.services.calls.create, writes);

  // A new port on the remote service reaches the mirror and its endpoints.
  const changed = svc("web", { [Labels.exported]: "true" });
  changed.spec!.ports!.push({ name: "admin", port: 9990, protocol: "TCP" });
  changed.metadata.resourceVersion = "2";
  w.remote.set("shop/web", changed);
  await r.reconcile("shop/web");
  assert.equal(w.api.services.peek("shop", "web-east")!.spec?.ports?.length, 2);
  assert.equal(
    w.api.services.peek("shop", "web-east")!.metadata.annotations?.[Annotations.remoteResourceVersion],
    "2",
  );
  assert.equal(w.api.endpoints.peek("shop", "web-east")!.subsets?.[0].ports?.[1].name, "admin");

  w.remote.set("shop/web", svc("web", {}));
  await r.reconcile("shop/web");
  assert.equal(w.api.services.peek("shop", "web-east"), undefined);
  assert.equal(w.api.endpoints.peek("shop", "web-east"), undefined);
  assert.deepEqual(r.counts(), { gateway: 0, flat: 0, federated: 0 });
});

Deno.test("gateway Endpoints are not ready while the gateway's probe fails", async () => {
  const w = world();
  let alive = false;
  const r = new Reconciler({
    api: w.api,
    link: () => makeLink("east"),
    remote: (ns, name) => w.remote.get(`${ns}/${name}`),
    namespaceExists: () => true,
    localFederatedMember: () => false,
    gatewayIps: () => Promise.resolve(["10.0.0.9"]),
    gatewayAlive: () => alive,
    log: () => {},
  });
  w.remote.set("shop/web", svc("web", { [Labels.exported]: "true" }));
  await r.reconcile("shop/web");
  let ep = w.api.endpoints.peek("shop", "web-east")!;
  assert.equal(ep.subsets?.[0].addresses, undefined);
  assert.deepEqual(ep.subsets?.[0].notReadyAddresses, [{ ip: "10.0.0.9" }]);
  alive = true;
  await r.reconcile("shop/web");
  ep = w.api.endpoints.peek("shop", "web-east")!;
  assert.deepEqual(ep.subsets?.[0].addresses, [{ ip: "10.0.0.9" }]);
  assert.equal(ep.subsets?.[0].notReadyAddresses, undefined);
});

Deno.test("flat export: labels for remote discovery and no Endpoints (gateway ones removed on a mode change)", async () => {
  const w = world();
  const r = reconciler(w, makeLink("east"));
  w.remote.set("shop/web", svc("web", { [Labels.exported]: "true" }));
  await r.reconcile("shop/web");
  assert.ok(w.api.endpoints.peek("shop", "web-east"));
  w.remote.set("shop/web", svc("web", { [Labels.exported]: "remote-discovery" }));
  await r.reconcile("shop/web");
  const mirror = w.api.services.peek("shop", "web-east")!;
  assert.equal(mirror.metadata.labels?.[Labels.remoteDiscovery], "east");
  assert.equal(mirror.metadata.labels?.[Labels.remoteService], "web");
  assert.equal(w.api.endpoints.peek("shop", "web-east"), undefined);
  assert.deepEqual(r.counts(), { gateway: 0, flat: 1, federated: 0 });
  // Deleted remotely: the mirror goes.
  w.remote.delete("shop/web");
  await r.reconcile("shop/web");
  assert.equal(w.api.services.peek("shop", "web-east"), undefined);
});

Deno.test("a namespace missing in the source cluster: skipped and logged once, mirrored once it exists", async () => {
  const w = world();
  const r = reconciler(w, makeLink("east"));
  w.remote.set("other/web", svc("web", { [Labels.exported]: "true" }, "other"));
  await r.reconcile("other/web");
  await r.reconcile("other/web");
  assert.equal(w.api.services.objects.size, 0);
  assert.equal(w.logs.filter((l) => l.includes("namespace other does not exist")).length, 1);
  w.namespaces.add("other");
  await r.reconcile("other/web");
  assert.ok(w.api.services.peek("other", "web-east"));
});

Deno.test("objects of the same name that this link does not own are left alone", async () => {
  const w = world();
  const r = reconciler(w, makeLink("east"));
  w.api.services.put(svc("web-east", { app: "mine" }));
  w.remote.set("shop/web", svc("web", { [Labels.exported]: "true" }));
  await r.reconcile("shop/web");
  assert.deepEqual(w.api.services.peek("shop", "web-east")!.metadata.labels, { app: "mine" });
  w.remote.delete("shop/web");
  await r.reconcile("shop/web");
  assert.ok(w.api.services.peek("shop", "web-east"), "not ours: not deleted");
});

Deno.test("federated: two links share one Service, each removes only its own entry", async () => {
  const w = world();
  const east = reconciler(w, makeLink("east"));
  const northRemote = new Map<string, Service>();
  const north = reconciler(w, makeLink("north"), northRemote);
  w.remote.set("shop/web", svc("web", { [Labels.federated]: "member" }));
  northRemote.set("shop/web", svc("web", { [Labels.federated]: "member" }));
  w.localMembers.add("shop/web");
  await east.reconcile("shop/web");
  await north.reconcile("shop/web");
  let fed = w.api.services.peek("shop", "web-federated")!;
  assert.equal(fed.metadata.annotations?.[Annotations.remoteDiscovery], "web@east,web@north");
  assert.equal(fed.metadata.annotations?.[Annotations.localDiscovery], "web");
  assert.equal(w.api.services.peek("shop", "web-east"), undefined, "federated only: no mirror");
  assert.deepEqual(east.counts(), { gateway: 0, flat: 0, federated: 1 });

  w.remote.set("shop/web", svc("web", {}));
  await east.reconcile("shop/web");
  fed = w.api.services.peek("shop", "web-federated")!;
  assert.equal(fed.metadata.annotations?.[Annotations.remoteDiscovery], "web@north");
  assert.equal(fed.metadata.annotations?.[Annotations.localDiscovery], "web");

  // The local member leaves: local discovery goes with it.
  w.localMembers.delete("shop/web");
  await north.reconcile("shop/web");
  assert.equal(
    w.api.services.peek("shop", "web-federated")!.metadata.annotations?.[Annotations.localDiscovery],
    undefined,
  );

  northRemote.delete("shop/web");
  await north.reconcile("shop/web");
  assert.equal(w.api.services.peek("shop", "web-federated"), undefined, "no member left");
});

Deno.test("federated: a conflicting write by another link is retried and both entries survive", async () => {
  const w = world();
  const east = reconciler(w, makeLink("east"));
  w.remote.set("shop/web", svc("web", { [Labels.federated]: "member" }));
  const base = w.api.services.put({
    ...svc("web-federated", { [Labels.mirroredService]: "true" }),
    metadata: {
      name: "web-federated",
      namespace: "shop",
      labels: { [Labels.mirroredService]: "true" },
      annotations: { [Annotations.remoteDiscovery]: "web@north" },
    },
  });
  let raced = false;
  w.api.services.beforeUpdate = () => {
    if (raced) return;
    raced = true;
    // Another service mirror adds its entry between our read and our write.
    const cur = w.api.services.peek("shop", "web-federated")!;
    w.api.services.put({
      ...cur,
      metadata: { ...cur.metadata, annotations: { [Annotations.remoteDiscovery]: "web@north,web@south" } },
    });
  };
  assert.ok(base);
  await east.reconcile("shop/web");
  assert.equal(
    w.api.services.peek("shop", "web-federated")!.metadata.annotations?.[Annotations.remoteDiscovery],
    "web@north,web@south,web@east",
  );
  assert.ok(w.api.services.calls.update >= 2, "the first write conflicted and was redone");
});

Deno.test("federated: the last member's delete is refused when another link joined meanwhile", async () => {
  const w = world();
  const east = reconciler(w, makeLink("east"));
  w.remote.set("shop/web", svc("web", { [Labels.federated]: "member" }));
  await east.reconcile("shop/web");
  w.remote.delete("shop/web");
  const realGet = w.api.services.get.bind(w.api.services);
  let once = false;
  w.api.services.get = async (ns, name) => {
    const got = await realGet(ns, name);
    if (!once && name === "web-federated") {
      once = true;
      const cur = w.api.services.peek(ns, name)!;
      w.api.services.put({
        ...cur,
        metadata: { ...cur.metadata, annotations: { [Annotations.remoteDiscovery]: "web@east,web@north" } },
      });
    }
    return got;
  };
  await east.reconcile("shop/web");
  assert.equal(
    w.api.services.peek("shop", "web-federated")!.metadata.annotations?.[Annotations.remoteDiscovery],
    "web@north",
  );
});

Deno.test("ownedKeys and removeAll: every mirror of the link goes, other links' objects stay", async () => {
  const w = world();
  const east = reconciler(w, makeLink("east"));
  const northRemote = new Map<string, Service>();
  const north = reconciler(w, makeLink("north"), northRemote);
  w.remote.set("shop/web", svc("web", { [Labels.exported]: "true", [Labels.federated]: "member" }));
  w.remote.set("shop/db", svc("db", { [Labels.exported]: "remote-discovery" }));
  northRemote.set("shop/web", svc("web", { [Labels.exported]: "true", [Labels.federated]: "member" }));
  for (const k of ["shop/web", "shop/db"]) await east.reconcile(k);
  await north.reconcile("shop/web");
  assert.deepEqual([...await east.ownedKeys()].sort(), ["shop/db", "shop/web"]);
  // Orphan after a restart: the remote is gone but the mirror remains; a resync of owned keys deletes it.
  w.remote.delete("shop/db");
  const restarted = reconciler(w, makeLink("east"));
  for (const k of await restarted.ownedKeys()) await restarted.reconcile(k);
  assert.equal(w.api.services.peek("shop", "db-east"), undefined);
  assert.ok(w.api.services.peek("shop", "web-east"));

  assert.equal(await east.removeAll(), 1);
  assert.equal(w.api.services.peek("shop", "web-east"), undefined);
  assert.equal(w.api.endpoints.peek("shop", "web-east"), undefined);
  assert.ok(w.api.services.peek("shop", "web-north"));
  assert.ok(w.api.endpoints.peek("shop", "web-north"));
  assert.equal(
    w.api.services.peek("shop", "web-federated")!.metadata.annotations?.[Annotations.remoteDiscovery],
    "web@north",
  );
});
