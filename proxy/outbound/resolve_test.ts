import assert from "node:assert/strict";
import { endpointTarget, pickEndpoint, policyBackend } from "./resolve.ts";
import { fallbackPolicy, meshedEndpoint } from "../testing/control_plane.ts";
import type { OutboundPolicy } from "../../proto/gen_messages/outbound.ts";

const B = "b.ns.serviceaccount.identity.linkerd.cluster.local";

Deno.test("outbound resolve: meshed endpoint with opaque transport goes to the inbound port", () => {
  assert.deepEqual(endpointTarget(meshedEndpoint("10.0.0.2", 8080, B), { ip: "10.0.0.2", port: 8080 }), {
    kind: "meshed",
    ip: "10.0.0.2",
    connectPort: 4143,
    targetPort: 8080,
    identity: B,
    serverName: B,
    opaqueTransport: true,
  });
  const noHint = { ...meshedEndpoint("10.0.0.2", 8080, B), protocolHint: undefined };
  const t = endpointTarget(noHint, { ip: "10.0.0.2", port: 8080 });
  assert.equal(
    t.kind === "meshed" && t.connectPort,
    8080,
    "without opaque transport, TLS goes to the port itself",
  );
  const plain = { ...meshedEndpoint("10.0.0.2", 8080, B), tlsIdentity: undefined };
  assert.equal(endpointTarget(plain, { ip: "10.0.0.2", port: 8080 }).kind, "plain");
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
  const eps = new Map([["10.0.0.1:80", meshedEndpoint("10.0.0.1", 80, B)], [
    "10.0.0.2:80",
    meshedEndpoint("10.0.0.2", 80, B),
  ]]);
  const picked = pickEndpoint(eps, { ip: "10.0.0.2", port: 80 });
  assert.equal(picked, eps.get("10.0.0.2:80"));
  assert.equal(pickEndpoint(new Map(), { ip: "10.0.0.2", port: 80 }), undefined);
});
