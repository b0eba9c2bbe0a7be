/** HTTPLocalRateLimitPolicy admission through the `/policy` handler: Linkerd's verdicts, messages naming the field. */
import assert from "node:assert/strict";
import { policyAdmissionHandler } from "./policy_validator.ts";

const handler = policyAdmissionHandler({ servers: () => [] });

function review(spec: unknown) {
  return {
    uid: "u1",
    kind: { group: "policy.linkerd.io", version: "v1alpha1", kind: "HTTPLocalRateLimitPolicy" },
    namespace: "emojivoto",
    name: "web-rl",
    operation: "CREATE",
    object: { metadata: { name: "web-rl", namespace: "emojivoto" }, spec },
  };
}
const server = { group: "policy.linkerd.io", kind: "Server", name: "web-http" };
const sa = (name: string, extra: Record<string, string> = {}) => ({ kind: "ServiceAccount", name, ...extra });

const accepted: [string, unknown][] = [
  ["a Server target with no limits at all", { targetRef: server }],
  [
    "total, identity and overrides within the total",
    {
      targetRef: server,
      total: { requestsPerSecond: 100 },
      identity: { requestsPerSecond: 100 },
      overrides: [{ requestsPerSecond: 100, clientRefs: [sa("vip"), sa("batch", { namespace: "jobs" })] }],
    },
  ],
  ["identity and override above each other without a total", {
    targetRef: server,
    identity: { requestsPerSecond: 5 },
    overrides: [{ requestsPerSecond: 500, clientRefs: [sa("vip")] }],
  }],
  ["a target group and kind in other letter case", {
    targetRef: { group: "Policy.Linkerd.io", kind: "SERVER", name: "web-http" },
    total: { requestsPerSecond: 1 },
  }],
  ["a ServiceAccount client with group core", {
    targetRef: server,
    overrides: [{
      requestsPerSecond: 1,
      clientRefs: [{ group: "core", kind: "ServiceAccount", name: "vip" }],
    }],
  }],
  ["an override with an empty client list", {
    targetRef: server,
    overrides: [{ requestsPerSecond: 3, clientRefs: [] }],
  }],
  ["the largest u32 limit", { targetRef: server, total: { requestsPerSecond: 4294967295 } }],
];
for (const [title, spec] of accepted) {
  Deno.test(`HTTPLocalRateLimitPolicy: accepts ${title}`, async () => {
    assert.deepEqual((await handler(review(spec))).problems, []);
  });
}

const rejected: [string, unknown, string][] = [
  [
    "a Service target",
    { targetRef: { kind: "Service", name: "web" } },
    'spec.targetRef.kind: "Service" is not a Server',
  ],
  [
    "a Server target without its group",
    { targetRef: { kind: "Server", name: "web-http" } },
    'spec.targetRef.kind: "Server" is not a Server',
  ],
  [
    "an HTTPRoute target",
    { targetRef: { group: "policy.linkerd.io", kind: "HTTPRoute", name: "r" } },
    'spec.targetRef.kind: "HTTPRoute.policy.linkerd.io"',
  ],
  ["no targetRef", {}, "spec.targetRef: required"],
  [
    "a zero total",
    { targetRef: server, total: { requestsPerSecond: 0 } },
    "spec.total.requestsPerSecond: must be greater than 0",
  ],
  [
    "a zero identity limit",
    { targetRef: server, identity: { requestsPerSecond: 0 } },
    "spec.identity.requestsPerSecond: must be greater than 0",
  ],
  [
    "a negative total",
    { targetRef: server, total: { requestsPerSecond: -1 } },
    "spec.total.requestsPerSecond: -1 is not a whole number",
  ],
  [
    "a total above u32",
    { targetRef: server, total: { requestsPerSecond: 4294967296 } },
    "spec.total.requestsPerSecond: 4294967296",
  ],
  [
    "an identity limit above the total",
    { targetRef: server, total: { requestsPerSecond: 10 }, identity: { requestsPerSecond: 11 } },
    "spec.identity.requestsPerSecond: 11 is above spec.total.requestsPerSecond (10)",
  ],
  [
    "an override above the total",
    {
      targetRef: server,
      total: { requestsPerSecond: 10 },
      overrides: [{ requestsPerSecond: 20, clientRefs: [sa("vip")] }],
    },
    "spec.overrides[0].requestsPerSecond: 20 is above spec.total.requestsPerSecond (10)",
  ],
  [
    "a zero override",
    { targetRef: server, overrides: [{ requestsPerSecond: 0, clientRefs: [sa("vip")] }] },
    "spec.overrides[0].requestsPerSecond: must be greater than 0",
  ],
  [
    "an override without clientRefs",
    { targetRef: server, overrides: [{ requestsPerSecond: 5 }] },
    "spec.overrides[0].clientRefs: required",
  ],
  [
    "an override client that is a Namespace",
    {
      targetRef: server,
      overrides: [{ requestsPerSecond: 5, clientRefs: [sa("vip"), { kind: "Namespace", name: "jobs" }] }],
    },
    'spec.overrides[0].clientRefs[1].kind: "Namespace" is not a ServiceAccount',
  ],
  [
    "an override client ServiceAccount in another group",
    {
      targetRef: server,
      overrides: [{
        requestsPerSecond: 5,
        clientRefs: [{ group: "policy.linkerd.io", kind: "ServiceAccount", name: "vip" }],
      }],
    },
    "spec.overrides[0].clientRefs[0].kind",
  ],
];
for (const [title, spec, want] of rejected) {
  Deno.test(`HTTPLocalRateLimitPolicy: rejects ${title}`, async () => {
    const d = await handler(review(spec));
    assert.ok(
      d.problems.some((p) => p.includes(want)),
      `problems ${JSON.stringify(d.problems)} lack ${want}`,
    );
  });
}
