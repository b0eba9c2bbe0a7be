/**
 * Schema of policy.linkerd.io HTTPLocalRateLimitPolicy (v1alpha1, the one version Linkerd serves),
 * with the fields Linkerd's CRD has: a Server targetRef, `total` and `identity` limits, and
 * `overrides` for ServiceAccount clients; a status subresource the policy controller writes
 * `Accepted` to. gen.ts writes the YAML. The admission
 * webhook (control/validator/ratelimit_validator.ts) holds the rules a schema cannot state.
 */

type Schema = Record<string, unknown>;

/** The shape gen.ts writes a CRD from (a subset of its own `Crd`). */
export interface RateLimitCrd {
  file: string;
  group: string;
  kind: string;
  plural: string;
  singular: string;
  versions: string[];
  storage: string;
  spec: Schema;
  status: Schema;
  printer: { name: string; type: string; jsonPath: string }[];
}

const str = (extra: Schema = {}): Schema => ({ type: "string", ...extra });
const obj = (properties: Record<string, Schema>, extra: Schema = {}): Schema => ({
  type: "object",
  properties,
  ...extra,
});

// The Kubernetes name rules for the parts of a reference, as Gateway API writes them.
const GROUP = str({
  maxLength: 253,
  pattern: "^$|^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$",
});
const KIND = str({ minLength: 1, maxLength: 63, pattern: "^[a-zA-Z]([-a-zA-Z0-9]*[a-zA-Z0-9])?$" });
const NAME = str({ minLength: 1, maxLength: 253 });
const NAMESPACE = str({ minLength: 1, maxLength: 63, pattern: "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$" });

// Linkerd types the field int64 in the schema and reads it as u32; the webhook refuses 0 and overflow.
const limit = (description: string): Schema =>
  obj({ requestsPerSecond: { type: "integer", format: "int64" } }, {
    required: ["requestsPerSecond"],
    description,
  });

const spec = obj({
  targetRef: obj({ group: GROUP, kind: KIND, name: NAME }, {
    required: ["kind", "name"],
    description: "The Server whose inbound HTTP traffic is limited (the only kind allowed).",
  }),
  total: limit("Cap on all requests to the target together; unset means none."),
  identity: limit("Cap per client identity; clients without a mesh identity share one."),
  overrides: {
    type: "array",
    description: "Dedicated caps for the identities of the listed ServiceAccounts.",
    items: obj({
      requestsPerSecond: { type: "integer", format: "int64" },
      clientRefs: {
        type: "array",
        items: obj({ group: GROUP, kind: KIND, namespace: NAMESPACE, name: NAME }, {
          required: ["kind", "name"],
        }),
      },
    }, { required: ["requestsPerSecond", "clientRefs"] }),
  },
}, { required: ["targetRef"] });

const condition = obj({
  type: str({ maxLength: 316 }),
  status: str({ enum: ["True", "False", "Unknown"] }),
  reason: str({ maxLength: 1024 }),
  message: str({ maxLength: 32768 }),
  lastTransitionTime: str({ format: "date-time" }),
  observedGeneration: { type: "integer", format: "int64" },
}, { required: ["type", "status"] });

export function rateLimitCrd(): RateLimitCrd {
  return {
    file: "httplocalratelimitpolicy.yaml",
    group: "policy.linkerd.io",
    kind: "HTTPLocalRateLimitPolicy",
    plural: "httplocalratelimitpolicies",
    singular: "httplocalratelimitpolicy",
    versions: ["v1alpha1"],
    storage: "v1alpha1",
    spec,
    status: obj({
      conditions: { type: "array", items: condition },
      targetRef: obj({ group: GROUP, kind: KIND, name: NAME }, { required: ["name"] }),
    }, { required: ["targetRef"] }),
    printer: [
      { name: "Target_kind", type: "string", jsonPath: ".spec.targetRef.kind" },
      { name: "Target_name", type: "string", jsonPath: ".spec.targetRef.name" },
      { name: "Total_RPS", type: "integer", jsonPath: ".spec.total.requestsPerSecond" },
      { name: "Identity_RPS", type: "integer", jsonPath: ".spec.identity.requestsPerSecond" },
    ],
  };
}
