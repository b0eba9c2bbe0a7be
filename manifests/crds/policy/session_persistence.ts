/**
 * `sessionPersistence` on Gateway API HTTPRoute and GRPCRoute rules, as in the Gateway API
 * experimental channel Linkerd bundles (v1.1): admitted with the same constraints, so manifests
 * written for Linkerd apply. Neither Linkerd's proxy API nor weft's proxy has session persistence;
 * the policy controller ignores the field (see docs/policy.md).
 */
type Schema = Record<string, unknown>;

// Gateway API's Duration: one to four number+unit groups, e.g. 1h30m.
const DURATION = { type: "string", pattern: "^([0-9]{1,5}(h|m|s|ms)){1,4}$" };

export const SESSION_PERSISTENCE: Schema = {
  type: "object",
  properties: {
    sessionName: { type: "string", maxLength: 128 },
    absoluteTimeout: DURATION,
    idleTimeout: DURATION,
    type: { type: "string", enum: ["Cookie", "Header"], default: "Cookie" },
    cookieConfig: {
      type: "object",
      properties: { lifetimeType: { type: "string", enum: ["Permanent", "Session"], default: "Session" } },
    },
  },
  "x-kubernetes-validations": [{
    message: "AbsoluteTimeout must be specified when cookie lifetimeType is Permanent",
    // Guarded with has(self.cookieConfig) so a rule without cookieConfig evaluates.
    rule: "!has(self.cookieConfig) || !has(self.cookieConfig.lifetimeType) || " +
      "self.cookieConfig.lifetimeType != 'Permanent' || has(self.absoluteTimeout)",
  }],
};

/**
 * A route spec whose rules also take `sessionPersistence`. The rules list gets Gateway API's own
 * bound (16): the API server refuses a CEL rule whose estimated cost over an unbounded list
 * exceeds its budget.
 */
export function withSessionPersistence(spec: Schema): Schema {
  const props = spec.properties as Record<string, Schema>;
  const rules = props.rules as { items: Schema };
  const ruleProps = rules.items.properties as Record<string, Schema>;
  return {
    ...spec,
    properties: {
      ...props,
      rules: {
        ...rules,
        maxItems: 16,
        items: { ...rules.items, properties: { ...ruleProps, sessionPersistence: SESSION_PERSISTENCE } },
      },
    },
  };
}
