import assert from "node:assert/strict";
import type { Obj } from "../policy/resources.ts";
import { policyAdmissionHandler } from "./policy_validator.ts";

const existing: Obj[] = [{
  metadata: { name: "web-http", namespace: "emojivoto" },
  spec: { podSelector: { matchLabels: { app: "web" } }, port: 8080 },
}];
const handler = policyAdmissionHandler({ servers: (ns) => ns === "emojivoto" ? existing as never : [] });

function review(group: string, kind: string, spec: unknown, name = "x", operation = "CREATE") {
  return {
    uid: "u1",
    kind: { group, version: "v1", kind },
    namespace: "emojivoto",
    name,
    operation,
    object: { metadata: { name, namespace: "emojivoto" }, spec },
  };
}
const P = "policy.linkerd.io", G = "gateway.networking.k8s.io";

// Each case: the resource, and a fragment every message must contain (field first).
const rejected: [string, ReturnType<typeof review>, string][] = [
  [
    "Server: bad selector operator",
    review(P, "Server", { podSelector: { matchExpressions: [{ key: "app", operator: "Like" }] }, port: 80 }),
    'spec.podSelector.matchExpressions[0].operator: "Like"',
  ],
  [
    "Server: both selectors",
    review(P, "Server", { podSelector: {}, externalWorkloadSelector: {}, port: 80 }),
    "spec.podSelector: exactly one",
  ],
  [
    "Server: port out of range",
    review(P, "Server", { podSelector: {}, port: 70000 }),
    "spec.port: 70000 is not in 1..65535",
  ],
  [
    "Server: bad proxyProtocol",
    review(P, "Server", { podSelector: {}, port: 80, proxyProtocol: "HTTP/3" }),
    'spec.proxyProtocol: "HTTP/3"',
  ],
  [
    "Server: duplicate for the same port",
    review(P, "Server", { podSelector: { matchLabels: { app: "web" } }, port: 8080 }, "web-http-2"),
    'spec.port: Server "web-http" already selects port 8080',
  ],
  [
    "Server: empty selector overlaps every Server on the port",
    review(P, "Server", { podSelector: {}, port: 8080 }, "all"),
    'Server "web-http" already selects',
  ],
  [
    "NetworkAuthentication: bad CIDR",
    review(P, "NetworkAuthentication", { networks: [{ cidr: "10.0.0.0/33" }] }),
    "spec.networks[0].cidr:",
  ],
  [
    "NetworkAuthentication: bad except",
    review(P, "NetworkAuthentication", { networks: [{ cidr: "10.0.0.0/8", except: ["10.1.0"] }] }),
    'spec.networks[0].except[0]: "10.1.0" is not an IPv4 address',
  ],
  [
    "NetworkAuthentication: except outside its cidr",
    review(P, "NetworkAuthentication", { networks: [{ cidr: "10.0.0.0/16", except: ["10.2.0.0/24"] }] }),
    'spec.networks[0].except[0]: "10.2.0.0/24" is not inside cidr "10.0.0.0/16"',
  ],
  [
    "NetworkAuthentication: except covering all of its cidr",
    review(P, "NetworkAuthentication", { networks: [{ cidr: "10.1.0.0/16", except: ["10.0.0.0/8"] }] }),
    'spec.networks[0].except[0]: "10.0.0.0/8" covers all of cidr "10.1.0.0/16"',
  ],
  [
    "ServerAuthorization: except of another address family",
    review(P, "ServerAuthorization", {
      server: { name: "s" },
      client: { unauthenticated: true, networks: [{ cidr: "10.0.0.0/8", except: ["fd00::/8"] }] },
    }),
    'spec.client.networks[0].except[0]: "fd00::/8" is not inside cidr "10.0.0.0/8"',
  ],
  [
    "ServerAuthorization: bad network",
    review(P, "ServerAuthorization", {
      server: { name: "s" },
      client: { unauthenticated: true, networks: [{ cidr: "nope" }] },
    }),
    "spec.client.networks[0].cidr:",
  ],
  [
    "ServerAuthorization: name and selector",
    review(P, "ServerAuthorization", {
      server: { name: "s", selector: {} },
      client: { unauthenticated: true },
    }),
    "spec.server: exactly one",
  ],
  [
    "ServerAuthorization: unauthenticated: true next to meshTLS",
    review(P, "ServerAuthorization", {
      server: { name: "s" },
      client: { unauthenticated: true, meshTLS: { identities: ["*"] } },
    }),
    "spec.client: exactly one of unauthenticated and meshTLS must be set",
  ],
  [
    "ServerAuthorization: unauthenticatedTLS with identities",
    review(P, "ServerAuthorization", {
      server: { name: "s" },
      client: { meshTLS: { unauthenticatedTLS: true, identities: ["*"] } },
    }),
    "spec.client.meshTLS.unauthenticatedTLS: must be false when identities or serviceAccounts are listed",
  ],
  [
    "ServerAuthorization: unauthenticatedTLS with serviceAccounts",
    review(P, "ServerAuthorization", {
      server: { name: "s" },
      client: { meshTLS: { unauthenticatedTLS: true, serviceAccounts: [{ name: "web" }] } },
    }),
    "spec.client.meshTLS.unauthenticatedTLS: must be false",
  ],
  [
    "AuthorizationPolicy: missing target kind",
    review(P, "AuthorizationPolicy", {
      targetRef: { group: P, kind: "Deployment", name: "web" },
      requiredAuthenticationRefs: [],
    }),
    'spec.targetRef.kind: "Deployment"',
  ],
  [
    "AuthorizationPolicy: unsupported authentication kind",
    review(P, "AuthorizationPolicy", {
      targetRef: { group: P, kind: "Server", name: "s" },
      requiredAuthenticationRefs: [{ kind: "Secret", name: "k" }],
    }),
    'spec.requiredAuthenticationRefs[0].kind: "Secret"',
  ],
  [
    "AuthorizationPolicy: other namespace as target",
    review(P, "AuthorizationPolicy", {
      targetRef: { kind: "Namespace", name: "kube-system" },
      requiredAuthenticationRefs: [],
    }),
    "spec.targetRef.name: a Namespace target",
  ],
  [
    "AuthorizationPolicy: two identity refs",
    review(P, "AuthorizationPolicy", {
      targetRef: { group: P, kind: "Server", name: "s" },
      requiredAuthenticationRefs: [{ kind: "ServiceAccount", name: "a" }, {
        group: P,
        kind: "MeshTLSAuthentication",
        name: "m",
      }],
    }),
    "at most one MeshTLSAuthentication or ServiceAccount",
  ],
  [
    "MeshTLSAuthentication: bad identity",
    review(P, "MeshTLSAuthentication", { identities: ["web*.example"] }),
    'spec.identities[0]: "web*.example"',
  ],
  [
    "MeshTLSAuthentication: SPIFFE ID with a port in its trust domain",
    review(P, "MeshTLSAuthentication", { identities: ["spiffe://example.org:8080/web"] }),
    'spec.identities[0]: "spiffe://example.org:8080/web" is not a SPIFFE ID: the trust domain takes',
  ],
  [
    "MeshTLSAuthentication: SPIFFE ID with a trailing slash",
    review(P, "MeshTLSAuthentication", { identities: ["spiffe://example.org/ns/web/"] }),
    'spec.identities[0]: "spiffe://example.org/ns/web/" is not a SPIFFE ID: the path has an empty segment',
  ],
  [
    "MeshTLSAuthentication: SPIFFE ID without a trust domain",
    review(P, "MeshTLSAuthentication", { identities: ["spiffe:///web"] }),
    'spec.identities[0]: "spiffe:///web" is not a SPIFFE ID: the trust domain is empty',
  ],
  [
    "MeshTLSAuthentication: SPIFFE ID with a dot segment",
    review(P, "MeshTLSAuthentication", { identities: ["spiffe://example.org/../web"] }),
    "is not a SPIFFE ID: the path has a '.' or '..' segment",
  ],
  [
    "MeshTLSAuthentication: bad identityRef kind",
    review(P, "MeshTLSAuthentication", { identityRefs: [{ kind: "Pod", name: "p" }] }),
    'spec.identityRefs[0].kind: "Pod"',
  ],
  [
    "MeshTLSAuthentication: Namespace identityRef with a namespace",
    review(P, "MeshTLSAuthentication", {
      identityRefs: [{ kind: "Namespace", name: "emojivoto", namespace: "emojivoto" }],
    }),
    "spec.identityRefs[0].namespace: a Namespace is cluster-scoped",
  ],
  [
    "HTTPRoute: invalid path regex",
    review(P, "HTTPRoute", {
      parentRefs: [{ group: P, kind: "Server", name: "s" }],
      rules: [{ matches: [{ path: { type: "RegularExpression", value: "/api/(" } }] }],
    }),
    'spec.rules[0].matches[0].path.value: "/api/(" is not a valid regular expression',
  ],
  [
    "HTTPRoute: invalid header regex",
    review(G, "HTTPRoute", {
      parentRefs: [{ kind: "Service", name: "web" }],
      rules: [{ matches: [{ headers: [{ type: "RegularExpression", name: "x", value: "[" }] }] }],
    }),
    "spec.rules[0].matches[0].headers[0].value:",
  ],
  [
    "HTTPRoute: look-around in a path regex (Rust regex has none)",
    review(G, "HTTPRoute", {
      parentRefs: [{ kind: "Service", name: "web" }],
      rules: [{ matches: [{ path: { type: "RegularExpression", value: "/api/(?!internal)" } }] }],
    }),
    'spec.rules[0].matches[0].path.value: "/api/(?!internal)" is not a valid regular expression: look-around',
  ],
  [
    "HTTPRoute: backreference in a query regex",
    review(G, "HTTPRoute", {
      parentRefs: [{ kind: "Service", name: "web" }],
      rules: [{ matches: [{ queryParams: [{ type: "RegularExpression", name: "q", value: "(a)\\1" }] }] }],
    }),
    'spec.rules[0].matches[0].queryParams[0].value: "(a)\\1" is not a valid regular expression: backreferences',
  ],
  [
    "policy HTTPRoute: a filter its CRD does not have",
    review(P, "HTTPRoute", {
      parentRefs: [{ kind: "Service", name: "web" }],
      rules: [{ filters: [{ type: "URLRewrite" }] }],
    }),
    'spec.rules[0].filters[0].type: filter "URLRewrite" is not supported',
  ],
  [
    "HTTPRoute: relative replaceFullPath redirect",
    review(G, "HTTPRoute", {
      parentRefs: [{ kind: "Service", name: "web", port: 80 }],
      rules: [{
        filters: [{
          type: "RequestRedirect",
          requestRedirect: { path: { type: "ReplaceFullPath", replaceFullPath: "login" } },
        }],
      }],
    }),
    'spec.rules[0].filters[0].requestRedirect.path.replaceFullPath: "login" is not an absolute path',
  ],
  [
    "HTTPRoute: Service backend without a port",
    review(G, "HTTPRoute", {
      parentRefs: [{ kind: "Service", name: "web", port: 80 }],
      rules: [{ backendRefs: [{ name: "web-v2" }] }],
    }),
    "spec.rules[0].backendRefs[0].port: a Service backend needs a port",
  ],
  [
    "HTTPRoute: bad timeout",
    review(G, "HTTPRoute", {
      parentRefs: [{ kind: "Service", name: "web" }],
      rules: [{ timeouts: { request: "soon" } }],
    }),
    "spec.rules[0].timeouts.request:",
  ],
  [
    "HTTPRoute: backendRequest timeout longer than the request timeout",
    review(P, "HTTPRoute", {
      parentRefs: [{ kind: "Service", name: "web", port: 80 }],
      rules: [{ timeouts: { request: "1s", backendRequest: "2s" } }],
    }),
    "spec.rules[0].timeouts.backendRequest: 2s is longer than timeouts.request 1s",
  ],
  [
    "HTTPRoute: Server parent in the wrong group",
    review(P, "HTTPRoute", { parentRefs: [{ kind: "Server", name: "s" }] }),
    "spec.parentRefs[0].group: a Server parent",
  ],
  [
    "GRPCRoute: regex method match",
    review(G, "GRPCRoute", {
      parentRefs: [{ kind: "Service", name: "web" }],
      rules: [{ matches: [{ method: { type: "RegularExpression", service: "a.*" } }] }],
    }),
    "spec.rules[0].matches[0].method.type",
  ],
];
for (const [title, req, want] of rejected) {
  Deno.test(`rejects ${title}`, async () => {
    const d = await handler(req);
    assert.ok(d.problems.length > 0, "want a problem");
    assert.ok(
      d.problems.some((p) => p.includes(want)),
      `problems ${JSON.stringify(d.problems)} lack ${want}`,
    );
  });
}

const accepted: [string, ReturnType<typeof review>][] = [
  [
    "Server on another port",
    review(P, "Server", {
      podSelector: { matchLabels: { app: "web" } },
      port: 9090,
      proxyProtocol: "HTTP/1",
    }),
  ],
  [
    "the same Server updated",
    review(P, "Server", { podSelector: { matchLabels: { app: "web" } }, port: 8080 }, "web-http", "UPDATE"),
  ],
  [
    "Server with a named port and a different selector",
    review(P, "Server", { podSelector: { matchLabels: { app: "api" } }, port: "http" }),
  ],
  [
    "AuthorizationPolicy on the namespace",
    review(P, "AuthorizationPolicy", {
      targetRef: { kind: "Namespace", name: "emojivoto" },
      requiredAuthenticationRefs: [{ group: P, kind: "NetworkAuthentication", name: "n" }],
    }),
  ],
  [
    "NetworkAuthentication with an except inside its cidr",
    review(P, "NetworkAuthentication", { networks: [{ cidr: "10.0.0.0/8", except: ["10.1.0.0/16"] }] }),
  ],
  [
    "MeshTLSAuthentication with a ServiceAccount identityRef in another namespace",
    review(P, "MeshTLSAuthentication", {
      identityRefs: [{ kind: "ServiceAccount", name: "web", namespace: "other" }, {
        kind: "Namespace",
        name: "emojivoto",
      }],
    }),
  ],
  [
    "ServerAuthorization with unauthenticatedTLS alone",
    review(P, "ServerAuthorization", {
      server: { name: "s" },
      client: { meshTLS: { unauthenticatedTLS: true } },
    }),
  ],
  [
    "ServerAuthorization with unauthenticated: false next to meshTLS",
    review(P, "ServerAuthorization", {
      server: { name: "s" },
      client: { unauthenticated: false, meshTLS: { identities: ["*"] } },
    }),
  ],
  [
    "NetworkAuthentication with bare addresses as cidr and except",
    review(P, "NetworkAuthentication", {
      networks: [{ cidr: "10.0.0.0/8", except: ["10.1.2.3"] }, { cidr: "192.168.0.7" }, { cidr: "fd00::1" }],
    }),
  ],
  [
    "MeshTLSAuthentication with SPIFFE IDs",
    review(P, "MeshTLSAuthentication", {
      identities: ["spiffe://example.org", "spiffe://example.org/ns/emojivoto/sa/web-v1.2_x"],
    }),
  ],
  [
    "MeshTLSAuthentication with globs",
    review(P, "MeshTLSAuthentication", {
      identities: ["*", "*.emojivoto.serviceaccount.identity.linkerd.cluster.local"],
    }),
  ],
  [
    "valid HTTPRoute",
    review(G, "HTTPRoute", {
      parentRefs: [{ group: "core", kind: "Service", name: "web", port: 80 }],
      rules: [{
        matches: [{ path: { type: "RegularExpression", value: "/api/v[0-9]+" } }],
        timeouts: { request: "5s" },
      }],
    }),
  ],
  [
    "HTTPRoute regexes in Rust regex syntax: (?i), \\- (JavaScript's RegExp refuses both)",
    review(P, "HTTPRoute", {
      parentRefs: [{ group: P, kind: "Server", name: "s" }],
      rules: [{
        matches: [{
          path: { type: "RegularExpression", value: "(?i)/API/v\\d+\\-beta" },
          headers: [{ type: "RegularExpression", name: "x-user", value: "(?i:admin|ops)\\-[[:digit:]]+" }],
          queryParams: [{ type: "RegularExpression", name: "q", value: "\\Aa\\-b\\z" }],
        }],
      }],
    }),
  ],
  [
    "GRPCRoute header regex with (?i)",
    review(G, "GRPCRoute", {
      parentRefs: [{ kind: "Service", name: "web", port: 80 }],
      rules: [{
        matches: [{ headers: [{ type: "RegularExpression", name: "x-env", value: "(?i)prod\\-.*" }] }],
      }],
    }),
  ],
  [
    "HTTPRoute with an absolute replaceFullPath redirect",
    review(P, "HTTPRoute", {
      parentRefs: [{ group: P, kind: "Server", name: "s" }],
      rules: [{
        filters: [{
          type: "RequestRedirect",
          requestRedirect: { path: { type: "ReplaceFullPath", replaceFullPath: "/login" } },
        }],
      }],
    }),
  ],
  [
    "Gateway API HTTPRoute with a Service backend and its port",
    review(G, "HTTPRoute", {
      parentRefs: [{ kind: "Service", name: "web", port: 80 }],
      rules: [{ backendRefs: [{ name: "web-v2", port: 8080 }] }],
    }),
  ],
  ["a DELETE", review(P, "Server", {}, "x", "DELETE")],
];
for (const [title, req] of accepted) {
  Deno.test(`accepts ${title}`, async () => {
    assert.deepEqual((await handler(req)).problems, []);
  });
}
