import assert from "node:assert/strict";
import { endpointTarget, headerTarget, pickEndpoint } from "./resolve.ts";
import { policyBackend } from "../discovery/outbound_view.ts";
import { type Endpoint, endpointFromWire } from "../core/endpoint.ts";
import { fallbackPolicy, meshedEndpoint } from "../testing/control_plane.ts";
import type { OutboundPolicy } from "../../proto/gen_messages/outbound.ts";

const B = "b.ns.serviceaccount.identity.linkerd.cluster.local";

/** The wire endpoint as discovery converts it. */
function ep(w: Parameters<typeof endpointFromWire>[0]): Endpoint {
  const e = endpointFromWire(w);
  if (!e) throw new Error("fixture has no address");
  return e;
}

Deno.test("outbound resolve: meshed endpoint with opaque transport goes to the inbound port", () => {
  assert.deepEqual(endpointTarget(ep(meshedEndpoint("10.0.0.2", 8080, B))), {
    kind: "meshed",
    ip: "10.0.0.2",
    connectPort: 4143,
    targetPort: 8080,
    identity: B,
    serverName: B,
    opaqueTransport: true,
  });
  const noHint = { ...meshedEndpoint("10.0.0.2", 8080, B), protocolHint: undefined };
  const t = endpointTarget(ep(noHint));
  assert.equal(
    t.kind === "meshed" && t.connectPort,
    8080,
    "without opaque transport, TLS goes to the port itself",
  );
  const plain = { ...meshedEndpoint("10.0.0.2", 8080, B), tlsIdentity: undefined };
  assert.equal(endpointTarget(ep(plain)).kind, "plain");
});

Deno.test("outbound resolve: backends from forward and balancer policies", () => {
  const fwd = policyBackend(fallbackPolicy("10.0.0.9", 443));
  assert.equal(fwd?.kind, "forward");
  const balancer: OutboundPolicy = structuredClone(fallbackPolicy("10.0.0.9", 443));
  const k = balancer.protocol!.kind!;
  if (k.$case !== "detect") throw new Error("fixture");
  const dist = k.value.opaque!.routes[0].rules[0].backends!.kind!;
  if (dist.$case !== "firstAvailable") throw new Error("fixture");
  dist.value.backends[0].backend!.kind = {
    $case: "balancer",
    value: {
      discovery: { kind: { $case: "dst", value: { path: "web.ns.svc.cluster.local:80" } } },
      load: undefined,
    },
  };
  assert.deepEqual(policyBackend(balancer), { kind: "balancer", path: "web.ns.svc.cluster.local:80" });
  assert.equal(policyBackend({ metadata: undefined, protocol: undefined }), undefined);
});

Deno.test("outbound resolve: the endpoint matching the original destination wins", () => {
  const eps = new Map([["10.0.0.1:80", ep(meshedEndpoint("10.0.0.1", 80, B))], [
    "10.0.0.2:80",
    ep(meshedEndpoint("10.0.0.2", 80, B)),
  ]]);
  const picked = pickEndpoint(eps, { ip: "10.0.0.2", port: 80 });
  assert.equal(picked, eps.get("10.0.0.2:80"));
  assert.equal(pickEndpoint(new Map(), { ip: "10.0.0.2", port: 80 }), undefined);
});

Deno.test("outbound resolve: an endpoint is read from the wire once, with the hints the stacks use", () => {
  const w = {
    ...meshedEndpoint("10.0.0.2", 8080, B),
    protocolHint: { protocol: { $case: "h2" as const, value: {} }, opaqueTransport: { inboundPort: 4143 } },
  };
  assert.deepEqual(endpointFromWire(w, { namespace: "ns", pod: "set" }), {
    ip: "10.0.0.2",
    port: 8080,
    identity: { name: B, serverName: B },
    opaqueTransportPort: 4143,
    h2: true,
    metricLabels: { namespace: "ns", pod: "set" },
  });
  assert.equal(
    endpointFromWire({ ...w, protocolHint: { protocol: undefined, opaqueTransport: { inboundPort: 70000 } } })
      ?.opaqueTransportPort,
    0,
    "an inbound port out of range is no opaque transport",
  );
  assert.equal(endpointFromWire({ ...w, addr: undefined }), undefined);
});

Deno.test("the TCP path skips endpoints whose connects fail while others remain, and uses them when none does", () => {
  const eps = new Map([
    ["10.0.0.1:80", ep(meshedEndpoint("10.0.0.1", 80, B))],
    ["10.0.0.2:80", ep(meshedEndpoint("10.0.0.2", 80, B))],
    ["10.0.0.3:80", ep(meshedEndpoint("10.0.0.3", 80, B))],
  ]);
  const dst = { ip: "10.96.0.9", port: 80 };
  const down = new Set(["10.0.0.1:80", "10.0.0.3:80"]);
  let r = 0;
  const random = () => (r = (r + 0.37) % 1);
  for (let i = 0; i < 30; i++) {
    assert.equal(pickEndpoint(eps, dst, (k) => down.has(k), random)?.ip, "10.0.0.2");
  }
  down.add("10.0.0.2:80");
  const seen = new Set<string>();
  for (let i = 0; i < 30; i++) seen.add(pickEndpoint(eps, dst, (k) => down.has(k), random)!.ip);
  assert.equal(seen.size, 3, "with every endpoint down, any may be tried");
});

Deno.test("outbound resolve: a gateway endpoint's header names the authority override's host and port", () => {
  const GW = "weft-gateway.weft-multicluster.serviceaccount.identity.weft.cluster.local";
  const w = {
    ...meshedEndpoint("10.1.0.5", 30143, GW),
    protocolHint: { protocol: undefined, opaqueTransport: { inboundPort: 30143 } },
    authorityOverride: { authorityOverride: "web.shop.svc.cluster.local.:8080" },
  };
  const t = endpointTarget(ep(w));
  assert.ok(t.kind === "meshed");
  if (t.kind !== "meshed") return;
  assert.equal(t.connectPort, 30143);
  assert.equal(t.opaqueTransport, true);
  assert.deepEqual(headerTarget(t), { name: "web.shop.svc.cluster.local", port: 8080 });
  // Without an authority override (or with one lacking a port, which Linkerd ignores): no name.
  assert.deepEqual(headerTarget(endpointTarget(ep(meshedEndpoint("10.0.0.2", 8080, B))) as typeof t), {
    name: "",
    port: 8080,
  });
  const noPort = { ...w, authorityOverride: { authorityOverride: "web.shop.svc.cluster.local" } };
  assert.deepEqual(headerTarget(endpointTarget(ep(noPort)) as typeof t), { name: "", port: 30143 });
  // An override alone (no opaque-transport hint) still uses the header, on the endpoint's port.
  const bare = { ...w, protocolHint: undefined };
  const b = endpointTarget(ep(bare));
  assert.ok(b.kind === "meshed" && b.opaqueTransport && b.connectPort === 30143);
});
