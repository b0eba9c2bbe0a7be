/**
 * Per-version spec schemas for kinds whose older versions Linkerd serves with fewer fields.
 * Every version is stored as the newest one and Kubernetes converts with strategy None (it only
 * relabels apiVersion), so an older version must never admit a field the newer ones read
 * differently: each one here is the newest schema with the fields that version lacks taken
 * away. The API server prunes (or, with strict field validation, refuses) those fields, as it
 * does for Linkerd's CRDs, and the controllers, which watch the storage version, read an object
 * written in any version as if written in the newest.
 */
type Schema = Record<string, unknown>;

function props(s: Schema): Record<string, Schema> {
  return s.properties as Record<string, Schema>;
}

/** `s` without the named properties (and without them in `required`). */
function without(s: Schema, ...names: string[]): Schema {
  const properties = { ...props(s) };
  for (const n of names) delete properties[n];
  const out: Schema = { ...s, properties };
  if (Array.isArray(s.required)) out.required = (s.required as string[]).filter((r) => !names.includes(r));
  return out;
}

/**
 * Server: v1beta3 (storage) has accessPolicy; v1beta2 adds externalWorkloadSelector (one of it
 * and podSelector); v1beta1 and v1alpha1 need podSelector, and v1alpha1 wants matchLabels or
 * matchExpressions in it (an empty selector is refused there).
 */
export function serverVersionSpecs(v1beta3: Schema): Record<string, Schema> {
  const v1beta2 = without(v1beta3, "accessPolicy");
  const v1beta1: Schema = {
    ...without(v1beta2, "externalWorkloadSelector"),
    required: ["podSelector", "port"],
  };
  delete v1beta1.oneOf;
  const podSelector = props(v1beta1).podSelector;
  const v1alpha1: Schema = {
    ...v1beta1,
    properties: {
      ...props(v1beta1),
      podSelector: {
        ...podSelector,
        oneOf: [{ required: ["matchExpressions"] }, { required: ["matchLabels"] }],
      },
    },
  };
  return { v1alpha1, v1beta1, v1beta2, v1beta3 };
}

/** policy.linkerd.io HTTPRoute: rule `timeouts` came with v1beta3 (the storage version). */
export function policyHttpRouteVersionSpecs(
  withTimeouts: Schema,
  withoutTimeouts: Schema,
): Record<string, Schema> {
  return {
    v1alpha1: withoutTimeouts,
    v1beta1: withoutTimeouts,
    v1beta2: withoutTimeouts,
    v1beta3: withTimeouts,
  };
}
