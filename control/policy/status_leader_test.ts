/**
 * The status writers under leader election (issue 19): a follower (`canWrite` false) patches nothing
 * while its store follows every change; on gaining leadership `resync()` writes whatever differs, and
 * a writer that stops leading mid-pass stops before its next patch.
 */
import { FakeClock } from "../../proto/support/fake_clock.ts";
import { FakeLeaseStore } from "../k8s/fake_lease_api.ts";
import { LeaderElector } from "../k8s/leader_election.ts";
import { assertEquals } from "./assert.ts";
import { defaultPolicyConfig } from "./config.ts";
import { EgressStatusWriter } from "./egress_status.ts";
import { RateLimitStatusWriter } from "./ratelimit_status.ts";
import type { Kind } from "./resources.ts";
import { RouteStatusWriter, type StatusClient } from "./route_status.ts";
import { httpRoute, meta, server, service, storeWith } from "./testing.ts";

const NS = "emojivoto";
const cfg = defaultPolicyConfig({ clusterNetworks: ["10.0.0.0/8"] });
const settle = () => new Promise((r) => setTimeout(r, 30));

function recording(onPatch?: () => void): StatusClient & { patches: string[] } {
  const patches: string[] = [];
  return {
    patches,
    patchStatus(kind: Kind, ns: string, name: string) {
      patches.push(`${kind} ${ns}/${name}`);
      onPatch?.();
      return Promise.resolve();
    },
  };
}

Deno.test("status writers write nothing while following, everything that differs on gaining leadership", async () => {
  const store = storeWith(
    ["Service", service(NS, "web-svc", { clusterIP: "10.96.0.10", ports: [{ port: 80 }] })],
    ["Server", server(NS, "web-http", { podSelector: {}, port: 8080 })],
    ["EgressNetwork", { metadata: meta("linkerd-egress", "all"), spec: { trafficPolicy: "Allow" } } as never],
  );
  let leading = false;
  const canWrite = () => leading;
  const client = recording();
  const routes = new RouteStatusWriter(store, cfg, client, { delayMs: 1, canWrite });
  const egress = new EgressStatusWriter(store, cfg, client, { delayMs: 1, canWrite });
  const limits = new RateLimitStatusWriter(store, client, { delayMs: 1, canWrite });
  try {
    store.apply({
      type: "added",
      kind: "GatewayHTTPRoute",
      object: httpRoute(NS, "r", { parentRefs: [{ kind: "Service", name: "web-svc", port: 80 }] }),
    });
    store.apply({
      type: "added",
      kind: "HTTPLocalRateLimitPolicy",
      object: {
        metadata: { ...meta(NS, "p"), generation: 1 },
        spec: { targetRef: { group: "policy.linkerd.io", kind: "Server", name: "web-http" } },
      } as never,
    });
    await settle();
    assertEquals(client.patches, []);
    leading = true;
    routes.resync();
    egress.resync();
    limits.resync();
    await settle();
    assertEquals(client.patches.sort(), [
      "EgressNetwork linkerd-egress/all",
      `GatewayHTTPRoute ${NS}/r`,
      `HTTPLocalRateLimitPolicy ${NS}/p`,
    ]);
  } finally {
    routes.close();
    egress.close();
    limits.close();
  }
});

Deno.test("a route status writer that stops leading mid-pass makes no further patch", async () => {
  const store = storeWith(
    ["Service", service(NS, "web-svc", { clusterIP: "10.96.0.10", ports: [{ port: 80 }] })],
    ...["a", "b", "c"].map((n) =>
      [
        "GatewayHTTPRoute",
        httpRoute(NS, n, { parentRefs: [{ kind: "Service", name: "web-svc", port: 80 }] }),
      ] as [Kind, never]
    ),
  );
  let leading = true;
  // The first patch is the last one this replica makes as leader.
  const client = recording(() => leading = false);
  const routes = new RouteStatusWriter(store, cfg, client, { delayMs: 1, canWrite: () => leading });
  try {
    routes.resync();
    await settle();
    assertEquals(client.patches.length, 1);
  } finally {
    routes.close();
  }
});

Deno.test("two replicas on one Lease: only the leader patches; after it shuts down the other takes over and resyncs", async () => {
  const leases = new FakeLeaseStore();
  const clock = new FakeClock();
  const svc = service(NS, "web-svc", { clusterIP: "10.96.0.10", ports: [{ port: 80 }] });
  const route = (name: string) =>
    httpRoute(NS, name, { parentRefs: [{ kind: "Service", name: "web-svc", port: 80 }] });
  const replicas = ["policy-a", "policy-b"].map((identity) => {
    const store = storeWith(["Service", svc]);
    const elector = new LeaderElector({
      api: leases.api(),
      clock,
      lease: "weft-policy-status",
      namespace: "weft",
      identity,
      random: () => 0,
    });
    const client = recording();
    const writer = new RouteStatusWriter(store, cfg, client, {
      delayMs: 1,
      canWrite: () => elector.isLeader(),
    });
    elector.onChange((leading) => leading && writer.resync());
    const ctl = new AbortController();
    const done = elector.start(ctl.signal);
    return { store, elector, client, writer, ctl, done };
  });
  const [a, b] = replicas;
  const both = (f: (r: typeof a) => void) => replicas.forEach(f);
  try {
    await settle();
    assertEquals([a.elector.isLeader(), b.elector.isLeader()], [true, false]);
    // Both see the same route (the same informers); only the leader writes its status.
    both((r) => r.store.apply({ type: "added", kind: "GatewayHTTPRoute", object: route("one") }));
    await settle();
    assertEquals(a.client.patches, [`GatewayHTTPRoute ${NS}/one`]);
    assertEquals(b.client.patches, []);
    // The leader shuts down (release); a route added meanwhile is written by the new leader's full pass.
    a.ctl.abort();
    await a.done;
    both((r) => r.store.apply({ type: "added", kind: "GatewayHTTPRoute", object: route("two") }));
    await settle();
    assertEquals(b.client.patches, []);
    for (let i = 0; i < 25 && !b.elector.isLeader(); i++) {
      clock.advance(100);
      await settle();
    }
    assertEquals(b.elector.isLeader(), true);
    await settle();
    // "one" carries no status in b's store (this test has no API server echoing a's write), so b writes both.
    assertEquals(b.client.patches.sort(), [`GatewayHTTPRoute ${NS}/one`, `GatewayHTTPRoute ${NS}/two`]);
    assertEquals(a.client.patches, [`GatewayHTTPRoute ${NS}/one`]);
  } finally {
    for (const r of replicas) {
      r.ctl.abort();
      r.writer.close();
    }
    await Promise.all(replicas.map((r) => r.done));
  }
});
