/**
 * The workload.linkerd.io ExternalWorkload CRD (issue 24), at the two versions Linkerd serves:
 * v1alpha1 (`spec.meshTls`, at most one workload IP, status as a plain field) and v1beta1, the
 * storage version (`spec.meshTLS`, up to two IPs, a status subresource). The versions differ in
 * field names, so this builds the whole manifest rather than one spec for every version as
 * gen.ts does for the policy kinds; gen.ts writes it next to the others.
 *
 * Linkerd validates ExternalWorkloads by schema only (its admission webhook does not take them),
 * so the schema is all weft checks: meshTLS identity and serverName required (1..253 chars),
 * ports 1..65535, the IP count above. One deliberate difference, below: each version also names
 * the other's TLS field, so an object written at v1alpha1 keeps its identity in storage.
 */

type Schema = Record<string, unknown>;

const str = (extra: Schema = {}): Schema => ({ type: "string", ...extra });
const obj = (properties: Record<string, Schema>, extra: Schema = {}): Schema => ({
  type: "object",
  properties,
  ...extra,
});
const arr = (items: Schema, extra: Schema = {}): Schema => ({ type: "array", items, ...extra });

export const EXTERNAL_WORKLOAD_GROUP = "workload.linkerd.io";
export const EXTERNAL_WORKLOAD_VERSIONS = ["v1alpha1", "v1beta1"] as const;
export type ExternalWorkloadVersion = typeof EXTERNAL_WORKLOAD_VERSIONS[number];

/** The field that holds the mesh TLS settings at each version. */
export const MESH_TLS_FIELD: Record<ExternalWorkloadVersion, string> = {
  v1alpha1: "meshTls",
  v1beta1: "meshTLS",
};
/** How many workload IPs each version admits (v1beta1: one IPv4 and one IPv6 at most). */
export const MAX_WORKLOAD_IPS: Record<ExternalWorkloadVersion, number> = { v1alpha1: 1, v1beta1: 2 };

const meshTls = obj({
  identity: str({
    minLength: 1,
    maxLength: 253,
    description: "The identity in the workload's certificate, checked by peers in the mTLS handshake.",
  }),
  serverName: str({
    minLength: 1,
    maxLength: 253,
    description: "The DNS-like name the workload terminates TLS for (SNI).",
  }),
}, { required: ["identity", "serverName"] });

const port = obj({
  name: str({ description: "An IANA service name, unique among the ports; Services may target it." }),
  port: { type: "integer", format: "int32", minimum: 1, maximum: 65535 },
  protocol: str({ default: "TCP", description: "TCP or UDP." }),
}, { required: ["port"] });

const condition = obj({
  type: str({
    maxLength: 316,
    pattern:
      "^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$",
  }),
  status: str({ enum: ["True", "False", "Unknown"] }),
  reason: str({ minLength: 1, maxLength: 1024, pattern: "^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$" }),
  message: str({ maxLength: 32768 }),
  lastProbeTime: str({ format: "date-time" }),
  lastTransitionTime: str({ format: "date-time" }),
}, { required: ["type", "status"] });

// The other version's spelling, unchecked. Without a conversion webhook the API server stores a
// v1alpha1 object as v1beta1 by renaming its apiVersion and dropping fields the v1beta1 schema does
// not name, so with Linkerd's schemas a workload written as v1alpha1 loses `meshTls` (its identity)
// on the way to storage. Naming it here keeps it; the controllers read either spelling.
const otherSpelling = obj({ identity: str(), serverName: str() }, {
  description: "The TLS settings under the other version's field name, kept so no version loses them.",
});

function versionSchema(v: ExternalWorkloadVersion): Schema {
  const tls = MESH_TLS_FIELD[v];
  const other = MESH_TLS_FIELD[v === "v1alpha1" ? "v1beta1" : "v1alpha1"];
  return obj({
    apiVersion: str(),
    kind: str(),
    metadata: { type: "object" },
    spec: obj({
      [tls]: meshTls,
      [other]: otherSpelling,
      ports: arr(port, { description: "The ports the workload exposes." }),
      workloadIPs: arr(obj({ ip: str() }), {
        maxItems: MAX_WORKLOAD_IPS[v],
        description: "Addresses traffic to the workload is sent to.",
      }),
    }, { required: [tls] }),
    status: obj({ conditions: arr(condition) }),
  }, {
    required: ["spec"],
    description: "A workload outside the cluster (a VM, a bare-metal host) enrolled in the mesh.",
  });
}

export interface ExternalWorkloadCrd {
  file: string;
  manifest: Schema;
}

export function externalWorkloadCrd(): ExternalWorkloadCrd {
  return {
    file: "externalworkload.yaml",
    manifest: {
      apiVersion: "apiextensions.k8s.io/v1",
      kind: "CustomResourceDefinition",
      metadata: {
        name: `externalworkloads.${EXTERNAL_WORKLOAD_GROUP}`,
        labels: {
          "app.kubernetes.io/managed-by": "weft",
          "app.kubernetes.io/part-of": "weft",
          "linkerd.io/control-plane-ns": "weft",
        },
      },
      spec: {
        group: EXTERNAL_WORKLOAD_GROUP,
        scope: "Namespaced",
        names: {
          kind: "ExternalWorkload",
          plural: "externalworkloads",
          singular: "externalworkload",
          listKind: "ExternalWorkloadList",
          categories: ["external"],
        },
        versions: EXTERNAL_WORKLOAD_VERSIONS.map((name) => ({
          name,
          served: true,
          storage: name === "v1beta1",
          // v1alpha1 has no status subresource in Linkerd: its status is written with the object.
          subresources: name === "v1beta1" ? { status: {} } : undefined,
          additionalPrinterColumns: [
            { name: "Identity", type: "string", jsonPath: `.spec.${MESH_TLS_FIELD[name]}.identity` },
            { name: "Age", type: "date", jsonPath: ".metadata.creationTimestamp" },
          ],
          schema: { openAPIV3Schema: versionSchema(name) },
        })),
      },
    },
  };
}
