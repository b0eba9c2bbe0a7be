/**
 * Whether this cluster's proxies will believe the identities the multicluster gateway forwards (issue 23).
 * The trust is a control-plane opt-in (`deno task deploy --multicluster-gateway-trust`, which gives the
 * injector `--trusted-gateway-identities`), so install can put a gateway in a cluster whose proxies refuse it:
 * say so rather than leave cross-cluster calls failing with no hint.
 */
import { multiclusterGatewayIdentity } from "../../proto/multicluster.ts";
import type { MeshFacts } from "./mesh_facts.ts";

/** The warning for an install, or undefined when there is nothing to warn about. */
export function gatewayTrustWarning(
  facts: Pick<MeshFacts, "controlPlaneNamespace" | "trustDomain" | "trustedGatewayIdentities">,
  gateway: boolean,
): string | undefined {
  if (!gateway) return undefined;
  const id = multiclusterGatewayIdentity(facts.controlPlaneNamespace, facts.trustDomain);
  if (facts.trustedGatewayIdentities.includes(id)) return undefined;
  return `warning: this cluster's injector does not trust the gateway (${id} is not in its ` +
    "--trusted-gateway-identities): proxies here will refuse the caller identities the gateway forwards, " +
    "so calls from linked clusters through it fail. Redeploy with `deno task deploy " +
    "--multicluster-gateway-trust`, then restart the workloads that should be reachable through the gateway " +
    "(`weft restart-proxies`).";
}
