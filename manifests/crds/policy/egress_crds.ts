/**
 * Schemas of the egress kinds (issue 24): policy.linkerd.io EgressNetwork, and the Gateway API
 * TLSRoute and TCPRoute at v1alpha2, the version Linkerd bundles. gen.ts passes in the parts it
 * shares with the other kinds (parent references, route status, networks) so a field reads the
 * same everywhere, and writes the YAML.
 */

import { TRAFFIC_POLICIES } from "../../../control/policy/egress_index.ts";

type Schema = Record<string, unknown>;

/** The shape gen.ts writes a CRD from (a subset of its own `Crd`). */
export interface EgressCrd {
  file: string;
  group: string;
  kind: string;
  plural: string;
  singular: string;
  shortNames?: string[];
  versions: string[];
  storage: string;
  spec: Schema;
  status?: Schema;
  gateway?: boolean;
  printer?: { name: string; type: string; jsonPath: string }[];
}

export interface SharedParts {
  parentRef: Schema;
  routeStatus: Schema;
  network: Schema;
}

const str = (extra: Schema = {}): Schema => ({ type: "string", ...extra });
const int = (extra: Schema = {}): Schema => ({ type: "integer", ...extra });
const arr = (items: Schema, extra: Schema = {}): Schema => ({ type: "array", items, ...extra });
const obj = (properties: Record<string, Schema>, extra: Schema = {}): Schema => ({
  type: "object",
  properties,
  ...extra,
});

// TLS and TCP routes name backends without filters.
const l4BackendRef = obj({
  group: str(),
  kind: str(),
  name: str({ minLength: 1, maxLength: 253 }),
  namespace: str(),
  port: int({ minimum: 1, maximum: 65535 }),
  weight: int({ minimum: 0, maximum: 1000000, default: 1 }),
}, { required: ["name"] });

const l4Rules = arr(obj({ name: str(), backendRefs: arr(l4BackendRef, { maxItems: 16 }) }), {
  minItems: 1,
  maxItems: 16,
});

const conditions = arr(obj({
  type: str(),
  status: str({ enum: ["True", "False", "Unknown"] }),
  reason: str(),
  message: str(),
  lastTransitionTime: str({ format: "date-time" }),
  observedGeneration: int({ format: "int64" }),
}, { required: ["type", "status", "reason", "message", "lastTransitionTime"] }));

export function egressCrds(p: SharedParts): EgressCrd[] {
  return [
    {
      file: "egressnetwork.yaml",
      group: "policy.linkerd.io",
      kind: "EgressNetwork",
      plural: "egressnetworks",
      singular: "egressnetwork",
      versions: ["v1alpha1"],
      storage: "v1alpha1",
      spec: obj({
        networks: arr(p.network, {
          description: "Addresses outside the cluster this EgressNetwork covers; unset means every " +
            "address outside the cluster networks.",
        }),
        trafficPolicy: str({
          enum: [...TRAFFIC_POLICIES],
          description: "What happens to traffic that no route attached to this EgressNetwork matches.",
        }),
      }, { required: ["trafficPolicy"] }),
      status: obj({ conditions }),
      printer: [{ name: "Traffic Policy", type: "string", jsonPath: ".spec.trafficPolicy" }, {
        name: "Age",
        type: "date",
        jsonPath: ".metadata.creationTimestamp",
      }],
    },
    {
      file: "gateway-tlsroute.yaml",
      group: "gateway.networking.k8s.io",
      kind: "TLSRoute",
      plural: "tlsroutes",
      singular: "tlsroute",
      versions: ["v1alpha2"],
      storage: "v1alpha2",
      spec: obj({
        parentRefs: arr(p.parentRef, { maxItems: 32 }),
        hostnames: arr(str({ minLength: 1, maxLength: 253 }), { maxItems: 16 }),
        rules: l4Rules,
      }),
      status: p.routeStatus,
      gateway: true,
    },
    {
      file: "gateway-tcproute.yaml",
      group: "gateway.networking.k8s.io",
      kind: "TCPRoute",
      plural: "tcproutes",
      singular: "tcproute",
      versions: ["v1alpha2"],
      storage: "v1alpha2",
      spec: obj({ parentRefs: arr(p.parentRef, { maxItems: 32 }), rules: l4Rules }),
      status: p.routeStatus,
      gateway: true,
    },
  ];
}
