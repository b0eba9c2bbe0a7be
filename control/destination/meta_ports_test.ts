// The proxy's own ports (admin 4191, control 4190) behind a pod IP: how a meshed client is told to reach them.
import assert from "node:assert/strict";
import { defaultConfig } from "./config.ts";
import { type Lookups, weightedAddr } from "./endpoints.ts";
import type { Pod } from "./k8s_types.ts";
import { pod } from "./testing.ts";

const lookups: Lookups = {
  pod: () => undefined,
  namespace: () => undefined,
  nodeZone: () => undefined,
  owner: () => undefined,
  servers: () => [],
};
const config = defaultConfig({ controlPlaneNamespace: "linkerd", forceOpaqueTransport: true });

function meshed(env?: { name: string; value: string }[]): Pod {
  const p = pod("ns", "web-1", "10.0.0.1", { meshed: true }) as Pod;
  const proxy = p.spec!.containers!.find((c) => c.name === "linkerd-proxy")!;
  if (env) proxy.env = env;
  return p;
}

Deno.test("the control port keeps the pod's identity but never opaque transport; app ports keep both", () => {
  const p = meshed();
  const control = weightedAddr("10.0.0.1", 4190, p, undefined, lookups, config);
  assert.equal(control.tlsIdentity?.serverName?.name, "web.ns.serviceaccount.identity.linkerd.cluster.local");
  assert.equal(control.protocolHint?.opaqueTransport, undefined);
  const app = weightedAddr("10.0.0.1", 8080, p, undefined, lookups, config);
  assert.equal(app.tlsIdentity?.serverName?.name, "web.ns.serviceaccount.identity.linkerd.cluster.local");
  assert.deepEqual(app.protocolHint?.opaqueTransport, { inboundPort: 4143 });
});

Deno.test("the admin port is served without identity (plain HTTP only)", () => {
  const admin = weightedAddr("10.0.0.1", 4191, meshed(), undefined, lookups, config);
  assert.equal(admin.tlsIdentity, undefined);
  assert.equal(admin.protocolHint, undefined);
});

Deno.test("meta ports follow the proxy's listen addresses when its env moves them", () => {
  const p = meshed([
    { name: "LINKERD2_PROXY_CONTROL_LISTEN_ADDR", value: "0.0.0.0:5190" },
    { name: "LINKERD2_PROXY_ADMIN_LISTEN_ADDR", value: "0.0.0.0:5191" },
  ]);
  assert.equal(
    weightedAddr("10.0.0.1", 5190, p, undefined, lookups, config).protocolHint?.opaqueTransport,
    undefined,
  );
  assert.equal(weightedAddr("10.0.0.1", 5191, p, undefined, lookups, config).tlsIdentity, undefined);
  // 4190 is now an ordinary port of this pod.
  assert.deepEqual(
    weightedAddr("10.0.0.1", 4190, p, undefined, lookups, config).protocolHint?.opaqueTransport,
    { inboundPort: 4143 },
  );
});
