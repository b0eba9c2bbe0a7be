import assert from "node:assert/strict";
import { gatewayTrustWarning } from "./gateway_trust.ts";

const gw = "weft-gateway.weft-multicluster.serviceaccount.identity.weft.cluster.local";
const facts = (trusted: string[]) => ({
  controlPlaneNamespace: "weft",
  trustDomain: "cluster.local",
  trustedGatewayIdentities: trusted,
});

Deno.test("install warns when it puts a gateway in a cluster whose injector does not trust it (issue 23)", () => {
  const w = gatewayTrustWarning(facts([]), true);
  assert.ok(w, "no trust configured: a warning");
  assert.match(w, /refuse the caller identities the gateway forwards/);
  assert.match(w, /deno task deploy --multicluster-gateway-trust/);
  assert.match(w, /weft restart-proxies/);
  assert.ok(w.includes(gw), "names the identity");
  // Another identity trusted (e.g. another trust domain's gateway) is not this gateway.
  assert.ok(
    gatewayTrustWarning(facts(["weft-gateway.weft-multicluster.serviceaccount.identity.weft.other"]), true),
  );
  assert.equal(gatewayTrustWarning(facts([gw]), true), undefined);
  assert.equal(gatewayTrustWarning(facts(["x.y", gw]), true), undefined);
  // No gateway installed: nothing forwards identities, so nothing to warn about.
  assert.equal(gatewayTrustWarning(facts([]), false), undefined);
  // The identity follows the cluster's trust domain and control-plane namespace.
  assert.equal(
    gatewayTrustWarning(
      {
        controlPlaneNamespace: "mesh",
        trustDomain: "east.example",
        trustedGatewayIdentities: [
          "weft-gateway.weft-multicluster.serviceaccount.identity.mesh.east.example",
        ],
      },
      true,
    ),
    undefined,
  );
});
