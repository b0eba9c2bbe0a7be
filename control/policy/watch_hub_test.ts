import assert from "node:assert/strict";
import { assertEquals, assertThrows } from "./assert.ts";
import { Server } from "../../proto/gen/inbound.ts";
import { OutboundPolicy, type TrafficSpec } from "../../proto/gen/outbound.ts";
import { toTcpAddress } from "../../proto/ip.ts";
import { defaultPolicyConfig } from "./config.ts";
import { inboundPolicy } from "./inbound_index.ts";
import { outboundPolicy } from "./outbound_index.ts";
import type { Container, Kind, Obj } from "./resources.ts";
import { PolicyStore } from "./store.ts";
import { authorizationPolicy, httpRoute, meshTls, namespace, pod, server, service } from "./testing.ts";
import { PolicyHub, type Subscriber } from "./watch_hub.ts";

const cfg = defaultPolicyConfig();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function containers(probePath: string): Container[] {
  return [{
    name: "app",
    ports: [{ name: "http", containerPort: 8080 }],
    readinessProbe: { httpGet: { path: probePath, port: "http" } },
  }];
}

function inRoute(app: string, rev: number): Obj {
  return httpRoute("a", `${app}-route`, {
    parentRefs: [{ group: "policy.linkerd.io", kind: "Server", name: `${app}-http` }],
    rules: [{ matches: [{ path: { type: "PathPrefix", value: `/in-${rev}` } }] }],
  });
}

function svcRoute(ns: string, name: string, rev: number): Obj {
  return httpRoute(ns, name, {
    parentRefs: [{ kind: "Service", name: "web", namespace: "a", port: 80 }],
    rules: [{
      matches: [{ path: { type: "PathPrefix", value: `/out-${rev}` } }],
      backendRefs: [{ name: "web", namespace: "a", port: 80 }],
    }],
  });
}

/**
 * Namespace a: apps web (pods web-0..2 with one probe path, web-3 with another) and api (api-0),
 * each with a Server on its http port and an inbound route; Service web with a producer route.
 * Namespace c holds a consumer route for web; b holds none.
 */
function cluster(): PolicyStore {
  const store = new PolicyStore();
  const add = (kind: Kind, object: Obj) => store.apply({ type: "added", kind, object });
  for (const ns of ["a", "b", "c"]) add("Namespace", namespace(ns));
  for (let i = 0; i < 4; i++) {
    add("Pod", pod("a", `web-${i}`, { app: "web" }, { containers: containers(i < 3 ? "/ready" : "/live") }));
  }
  add("Pod", pod("a", "api-0", { app: "api" }, { containers: containers("/ready") }));
  for (const app of ["web", "api"]) {
    add("Server", server("a", `${app}-http`, { podSelector: { matchLabels: { app } }, port: "http" }));
    add("HTTPRoute", inRoute(app, 0));
  }
  add("Service", service("a", "web", { clusterIP: "10.96.0.10", ports: [{ port: 80 }] }));
  add("GatewayHTTPRoute", svcRoute("a", "web-producer", 0));
  add("GatewayHTTPRoute", svcRoute("c", "web-consumer", 0));
  return store;
}

class Recorder implements Subscriber {
  messages: Uint8Array[] = [];
  errors: unknown[] = [];
  send(b: Uint8Array): void {
    this.messages.push(b);
  }
  fail(e: unknown): void {
    this.errors.push(e);
  }
  get last(): Uint8Array {
    return this.messages[this.messages.length - 1];
  }
}

const outSpec = (srcNs: string): TrafficSpec => ({
  sourceWorkload: `${srcNs}:client`,
  target: { $case: "addr", value: toTcpAddress("10.96.0.10", 80) },
});

function subscribeAll(hub: PolicyHub) {
  const pods = ["web-0", "web-1", "web-2", "web-3", "api-0"];
  const inbound = new Map(pods.map((p) => {
    const r = new Recorder();
    hub.watchInbound("a", p, 8080, r);
    return [p, r];
  }));
  const outbound = new Map(["a", "b", "c"].map((ns) => {
    const r = new Recorder();
    hub.watchOutbound(outSpec(ns), r);
    return [ns, r];
  }));
  return { inbound, outbound };
}

const modify = (store: PolicyStore, kind: Kind, object: Obj) =>
  store.apply({ type: "modified", kind, object });

Deno.test("shared answers are byte-identical to encoding each stream's policy on its own", async () => {
  const store = cluster();
  const hub = new PolicyHub(store, cfg, { coalesceWindowMs: 1 });
  const { inbound, outbound } = subscribeAll(hub);
  const before = { ...hub.stats };
  modify(store, "HTTPRoute", inRoute("web", 1));
  modify(store, "GatewayHTTPRoute", svcRoute("a", "web-producer", 1));
  await sleep(30);

  for (const [p, r] of inbound) {
    assertEquals(r.last, Server.encode(inboundPolicy(store, cfg, "a", p, 8080)).finish(), p);
  }
  for (const [ns, r] of outbound) {
    assertEquals(r.last, OutboundPolicy.encode(outboundPolicy(store, cfg, outSpec(ns))).finish(), ns);
  }
  // Pods with the same Server, port and probe paths got the very same bytes; web-3 (another probe
  // path, an input of a Server's default routes) was encoded on its own, and the client with a
  // consumer route got an answer of its own.
  assert.strictEqual(inbound.get("web-0")!.last, inbound.get("web-1")!.last);
  assert.strictEqual(inbound.get("web-1")!.last, inbound.get("web-2")!.last);
  assert.notStrictEqual(inbound.get("web-3")!.last, inbound.get("web-0")!.last);
  assert.strictEqual(outbound.get("a")!.last, outbound.get("b")!.last);
  assert.notDeepStrictEqual(outbound.get("c")!.last, outbound.get("a")!.last);
  // 4 web topics and the 3 clients of web (a producer route reaches all): 4 encodings for 7.
  assertEquals(hub.stats.recomputed - before.recomputed, 7);
  assertEquals(hub.stats.encoded - before.encoded, 4);
  hub.close();
});

Deno.test("a route change recomputes only the topics of the Server or Service it names", async () => {
  const store = cluster();
  const hub = new PolicyHub(store, cfg, { coalesceWindowMs: 1 });
  const { inbound, outbound } = subscribeAll(hub);
  modify(store, "HTTPRoute", inRoute("api", 1));
  await sleep(30);
  assertEquals(hub.stats.recomputed, 1);
  assertEquals(inbound.get("api-0")!.messages.length, 2);
  assertEquals(inbound.get("web-0")!.messages.length, 1);
  // A consumer route reaches only its own namespace's clients.
  modify(store, "GatewayHTTPRoute", svcRoute("c", "web-consumer", 1));
  await sleep(30);
  assertEquals(hub.stats.recomputed, 2);
  assertEquals(outbound.get("c")!.messages.length, 2);
  assertEquals(outbound.get("a")!.messages.length, 1);
  hub.close();
});

Deno.test("a route moving to another Server reaches the topics of both", async () => {
  const store = cluster();
  const hub = new PolicyHub(store, cfg, { coalesceWindowMs: 1 });
  const { inbound } = subscribeAll(hub);
  const moved = httpRoute("a", "web-route", {
    parentRefs: [{ group: "policy.linkerd.io", kind: "Server", name: "api-http" }],
    rules: [{ matches: [{ path: { type: "PathPrefix", value: "/moved" } }] }],
  });
  modify(store, "HTTPRoute", moved);
  await sleep(30);
  for (const p of ["web-0", "api-0"]) {
    assertEquals(inbound.get(p)!.last, Server.encode(inboundPolicy(store, cfg, "a", p, 8080)).finish(), p);
    assertEquals(inbound.get(p)!.messages.length, 2, p);
  }
  hub.close();
});

Deno.test("coalescing never loses the final state", async () => {
  const store = cluster();
  const hub = new PolicyHub(store, cfg, { coalesceWindowMs: 15 });
  const { inbound, outbound } = subscribeAll(hub);
  // Bursts with pauses shorter and longer than the window, so some changes fold and some do not.
  let rev = 0;
  for (let burst = 0; burst < 12; burst++) {
    for (let k = 0; k < 1 + (burst * 7) % 5; k++) {
      rev++;
      modify(store, "HTTPRoute", inRoute("web", rev));
      modify(store, "GatewayHTTPRoute", svcRoute("a", "web-producer", rev));
    }
    await sleep((burst * 11) % 25);
  }
  await sleep(60);
  for (const [p, r] of inbound) {
    assertEquals(r.last, Server.encode(inboundPolicy(store, cfg, "a", p, 8080)).finish(), p);
  }
  for (const [ns, r] of outbound) {
    assertEquals(r.last, OutboundPolicy.encode(outboundPolicy(store, cfg, outSpec(ns))).finish(), ns);
  }
  assert(hub.stats.flushes < rev, `${hub.stats.flushes} flushes for ${rev} changes: nothing coalesced`);
  hub.close();
});

Deno.test("the coalescing window is bounded: steady changes do not postpone the flush", async () => {
  const store = cluster();
  const hub = new PolicyHub(store, cfg, { coalesceWindowMs: 20 });
  const { inbound } = subscribeAll(hub);
  const start = performance.now();
  // A change every ~4 ms for 160 ms: a window that restarted on each change would never flush.
  for (let rev = 1; performance.now() - start < 160; rev++) {
    modify(store, "HTTPRoute", inRoute("web", rev));
    await sleep(4);
  }
  assert(hub.stats.flushes >= 3, `only ${hub.stats.flushes} flushes in 160 ms of steady changes`);
  assert(inbound.get("web-0")!.messages.length >= 4);
  hub.close();
});

Deno.test("the coalescing window is checked", () => {
  const store = cluster();
  for (const w of [-1, Number.NaN, 5000]) {
    const err = assertThrows(() => new PolicyHub(store, cfg, { coalesceWindowMs: w }), RangeError);
    assert.match(err.message, /coalesce window/, String(w));
  }
});

const addrSpec = (ip: string): TrafficSpec => ({
  sourceWorkload: "b:client",
  target: { $case: "addr", value: toTcpAddress(ip, 80) },
});

Deno.test("a Service change recomputes only the topics answered from it or asking about its addresses", async () => {
  const store = cluster();
  store.apply({
    type: "added",
    kind: "Service",
    object: service("a", "api", { clusterIP: "10.96.0.20", ports: [{ port: 80 }] }),
  });
  const hub = new PolicyHub(store, cfg, { coalesceWindowMs: 1 });
  const { outbound } = subscribeAll(hub);
  const byIp = new Map(["10.96.0.20", "10.96.0.30", "10.96.0.40"].map((ip) => {
    const r = new Recorder();
    hub.watchOutbound(addrSpec(ip), r);
    return [ip, r];
  }));
  const expectCurrent = () => {
    for (const [ip, r] of byIp) {
      assertEquals(r.last, OutboundPolicy.encode(outboundPolicy(store, cfg, addrSpec(ip))).finish(), ip);
    }
    for (const [ns, r] of outbound) {
      assertEquals(r.last, OutboundPolicy.encode(outboundPolicy(store, cfg, outSpec(ns))).finish(), ns);
    }
  };

  // A modification (a new port): only the topic answered from api.
  let before = hub.stats.recomputed;
  modify(
    store,
    "Service",
    service("a", "api", { clusterIP: "10.96.0.20", ports: [{ port: 80 }, { port: 81 }] }),
  );
  await sleep(30);
  assertEquals(hub.stats.recomputed - before, 1);
  expectCurrent();

  // Moving to another address: the old address's topic falls back, the new one's gets the Service.
  before = hub.stats.recomputed;
  modify(store, "Service", service("a", "api", { clusterIP: "10.96.0.30", ports: [{ port: 80 }] }));
  await sleep(30);
  assertEquals(hub.stats.recomputed - before, 2);
  assertEquals(byIp.get("10.96.0.20")!.messages.length, 2); // the new port changed nothing on 80
  assertEquals(byIp.get("10.96.0.30")!.messages.length, 2);
  assertEquals(byIp.get("10.96.0.40")!.messages.length, 1);
  expectCurrent();

  // A new Service (it may be a backend anywhere): every outbound topic is recomputed, and the
  // address it takes is answered from it.
  store.apply({
    type: "added",
    kind: "Service",
    object: service("b", "new", { clusterIP: "10.96.0.40", ports: [{ port: 80 }] }),
  });
  await sleep(30);
  assertEquals(byIp.get("10.96.0.40")!.messages.length, 2);
  expectCurrent();
  hub.close();
});

Deno.test("an authentication change recomputes only namespaces whose AuthorizationPolicies require it", async () => {
  const store = cluster();
  const add = (kind: Kind, object: Obj) => store.apply({ type: "added", kind, object });
  add("Namespace", namespace("d"));
  add("Pod", pod("d", "db-0", { app: "db" }, { containers: containers("/ready") }));
  add("Server", server("d", "db-http", { podSelector: { matchLabels: { app: "db" } }, port: "http" }));
  // web's policy in a requires an authentication that lives in b; d requires none of them.
  add("MeshTLSAuthentication", meshTls("b", "clients", { identities: ["one.b.serviceaccount.identity"] }));
  add("MeshTLSAuthentication", meshTls("b", "unused", { identities: ["x.b.serviceaccount.identity"] }));
  add(
    "AuthorizationPolicy",
    authorizationPolicy("a", "web-authz", {
      targetRef: { group: "policy.linkerd.io", kind: "Server", name: "web-http" },
      requiredAuthenticationRefs: [
        { group: "policy.linkerd.io", kind: "MeshTLSAuthentication", name: "clients", namespace: "b" },
      ],
    }),
  );
  const hub = new PolicyHub(store, cfg, { coalesceWindowMs: 1 });
  const { inbound } = subscribeAll(hub);
  const db = new Recorder();
  hub.watchInbound("d", "db-0", 8080, db);

  let before = hub.stats.recomputed;
  modify(
    store,
    "MeshTLSAuthentication",
    meshTls("b", "unused", { identities: ["y.b.serviceaccount.identity"] }),
  );
  await sleep(30);
  assertEquals(hub.stats.recomputed - before, 0);

  before = hub.stats.recomputed;
  modify(
    store,
    "MeshTLSAuthentication",
    meshTls("b", "clients", { identities: ["two.b.serviceaccount.identity"] }),
  );
  await sleep(30);
  // The five pods of namespace a, not d's.
  assertEquals(hub.stats.recomputed - before, 5);
  assertEquals(db.messages.length, 1);
  for (const [p, r] of inbound) {
    assertEquals(r.last, Server.encode(inboundPolicy(store, cfg, "a", p, 8080)).finish(), p);
  }
  assertEquals(inbound.get("web-0")!.messages.length, 2);
  hub.close();
});

Deno.test("after a quiet window a change goes out at once; one right after a flush waits for the window", async () => {
  const store = cluster();
  const hub = new PolicyHub(store, cfg, { coalesceWindowMs: 300 });
  const { inbound } = subscribeAll(hub);
  const web = inbound.get("web-0")!;
  modify(store, "HTTPRoute", inRoute("web", 1));
  await sleep(50);
  assertEquals(web.messages.length, 2, "the first change waited for the window");
  modify(store, "HTTPRoute", inRoute("web", 2));
  modify(store, "HTTPRoute", inRoute("web", 3));
  await sleep(50);
  assertEquals(web.messages.length, 2, "changes right after a flush went out before the window's end");
  await sleep(400);
  assertEquals(web.messages.length, 3, "the two changes were merged into one update");
  assertEquals(web.last, Server.encode(inboundPolicy(store, cfg, "a", "web-0", 8080)).finish());
  hub.close();
});
