import { assertEquals, assertThrows } from "./assert.ts";
import type { Authz, HttpRoute, Server as ProtoServer } from "../../proto/gen/inbound.ts";
import { fromIpAddress } from "../../proto/ip.ts";
import { RequestError } from "../grpc/request_error.ts";
import { defaultPolicyConfig } from "./config.ts";
import { inboundPolicy, parseWorkload } from "./inbound_index.ts";
import type { Kind, Obj } from "./resources.ts";
import {
  authorizationPolicy,
  grpcRoute,
  httpRoute,
  meshTls,
  namespace,
  networkAuthn,
  pod,
  server,
  serverAuthorization,
  storeWith,
} from "./testing.ts";

const cfg = defaultPolicyConfig({ clusterNetworks: ["10.0.0.0/8"] });
const NS = "emojivoto";
const web = () => pod(NS, "web-1", { app: "web", tier: "front" });

function policy(objects: [Kind, Obj][], port = 8080, p: Obj = web()): ProtoServer {
  return inboundPolicy(
    storeWith(["Namespace", namespace(NS)], ["Pod", p], ...objects),
    cfg,
    NS,
    p.metadata.name,
    port,
  );
}

const nets = (a: Authz) =>
  a.networks.map((n) => `${fromIpAddress(n.net!.ip!)}/${n.net!.prefixLen}` + (n.except.length ? "!" : ""));
function authn(a: Authz): string {
  const p = a.authentication?.permit;
  if (p?.$case === "unauthenticated") return "unauthenticated";
  const c = p?.value.clients;
  if (c?.$case === "unauthenticated") return "tls-unauthenticated";
  if (c?.$case === "identities") {
    return [
      ...c.value.identities.map((i) => i.name),
      ...c.value.suffixes.map((s) => `*${s.parts.map((x) => "." + x).join("")}`),
    ].join(",");
  }
  return "none";
}
function httpRoutes(s: ProtoServer): HttpRoute[] {
  const k = s.protocol?.kind;
  if (k?.$case === "detect") return k.value.httpRoutes;
  if (k?.$case === "http1" || k?.$case === "http2") return k.value.routes;
  return [];
}
const routeName = (r: { metadata?: { kind?: { $case: string; value: unknown } } }) => {
  const k = r.metadata?.kind;
  return k?.$case === "default"
    ? `default:${k.value}`
    : `${(k?.value as { kind: string }).kind}:${(k?.value as { name: string }).name}`;
};

// --- workload parsing ---

const workloads: [string, string | ReturnType<typeof parseWorkload>][] = [
  ['{"ns":"emojivoto","pod":"web-1"}', { namespace: "emojivoto", pod: "web-1" }],
  ["emojivoto:web-1", { namespace: "emojivoto", pod: "web-1" }],
  ['{"ns":"emojivoto"}', '"pod" must be a non-empty string'],
  ['{"ns":"x","external_workload":"vm"}', { namespace: "x", externalWorkload: "vm" }],
  ['{"ns":"x","external_workload":""}', '"external_workload" must be a non-empty string'],
  ["{not json", "is not valid JSON"],
  ["web-1", 'neither {"ns":"..","pod":".."} nor "<namespace>:<pod>"'],
];
for (const [text, want] of workloads) {
  Deno.test(`parseWorkload ${text}`, () => {
    if (typeof want === "string") {
      const e = assertThrows(() => parseWorkload(text), RequestError);
      assertEquals(e.kind, "invalid_argument");
      if (!e.message.includes(want)) throw new Error(`message ${e.message} lacks ${want}`);
    } else assertEquals(parseWorkload(text), want);
  });
}

Deno.test("unknown pod is not_found naming the pod", () => {
  const e = assertThrows(() => inboundPolicy(storeWith(), cfg, NS, "ghost", 80), RequestError);
  assertEquals([e.kind, e.message], ["not_found", "pod emojivoto/ghost not found"]);
});

// --- every default policy ---

const defaults: [string, string[], string][] = [
  ["all-unauthenticated", ["0.0.0.0/0", "::/0"], "unauthenticated"],
  ["cluster-unauthenticated", ["10.0.0.0/8"], "unauthenticated"],
  ["all-authenticated", ["0.0.0.0/0", "::/0"], "*"],
  ["cluster-authenticated", ["10.0.0.0/8"], "*"],
  ["audit", ["0.0.0.0/0", "::/0"], "unauthenticated"],
  ["deny", [], ""],
];
for (const [name, wantNets, wantAuthn] of defaults) {
  Deno.test(`default policy ${name}: labels, detect timeout, authorizations`, () => {
    const s = inboundPolicy(
      storeWith(["Pod", web()]),
      defaultPolicyConfig({ clusterNetworks: ["10.0.0.0/8"], defaultPolicy: name as never }),
      NS,
      "web-1",
      8080,
    );
    assertEquals(s.labels, { group: "", kind: "default", name });
    const k = s.protocol?.kind;
    assertEquals(k?.$case, "detect");
    if (k?.$case === "detect") assertEquals(k.value.timeout, { seconds: 10n, nanos: 0 });
    if (name === "deny") assertEquals(s.authorizations, []);
    else {
      assertEquals(s.authorizations.length, 1);
      assertEquals(nets(s.authorizations[0]), wantNets);
      assertEquals(authn(s.authorizations[0]), wantAuthn);
      assertEquals(s.authorizations[0].metadata, { kind: { $case: "default", value: name } });
      assertEquals(s.authorizations[0].labels.name, name);
    }
  });
}

// --- defaults by annotation ---

const A = "config.linkerd.io/default-inbound-policy";
const annotationCases: [
  string,
  Record<string, string> | undefined,
  Record<string, string> | undefined,
  string,
][] = [
  ["cluster default", undefined, undefined, "all-unauthenticated"],
  ["namespace annotation", undefined, { [A]: "deny" }, "deny"],
  ["pod wins over namespace", { [A]: "cluster-authenticated" }, { [A]: "deny" }, "cluster-authenticated"],
  ["invalid pod value falls back to namespace", { [A]: "allow-everything" }, { [A]: "audit" }, "audit"],
];
for (const [title, podAnn, nsAnn, want] of annotationCases) {
  Deno.test(`default by annotation: ${title}`, () => {
    const p = pod(NS, "web-1", { app: "web" }, { annotations: podAnn });
    const s = inboundPolicy(
      storeWith(["Namespace", namespace(NS, nsAnn)], ["Pod", p]),
      cfg,
      NS,
      "web-1",
      8080,
    );
    assertEquals(s.labels.name, want);
  });
}

Deno.test("opaque-ports annotation makes the default opaque", () => {
  const p = pod(NS, "db-0", { app: "db" }, {
    annotations: { "config.linkerd.io/opaque-ports": "3306,4000-4100" },
  });
  assertEquals(policy([], 4050, p).protocol?.kind?.$case, "opaque");
  assertEquals(policy([], 8080, p).protocol?.kind?.$case, "detect");
});

// --- selector precedence and named ports ---

const precedence: [string, [Kind, Obj][], number, string][] = [
  [
    "more selector requirements win",
    [
      ["Server", server(NS, "broad", { podSelector: { matchLabels: { app: "web" } }, port: 8080 })],
      [
        "Server",
        server(NS, "narrow", { podSelector: { matchLabels: { app: "web", tier: "front" } }, port: 8080 }),
      ],
    ],
    8080,
    "narrow",
  ],
  [
    "a port number wins over a port name at equal specificity",
    [
      ["Server", server(NS, "by-name", { podSelector: { matchLabels: { app: "web" } }, port: "http" })],
      ["Server", server(NS, "by-number", { podSelector: { matchLabels: { app: "web" } }, port: 8080 })],
    ],
    8080,
    "by-number",
  ],
  [
    "the oldest wins at equal rank",
    [
      [
        "Server",
        server(NS, "b-old", { podSelector: { matchLabels: { app: "web" } }, port: 8080 }, {
          created: "2024-01-01T00:00:00Z",
        }),
      ],
      [
        "Server",
        server(NS, "a-new", { podSelector: { matchLabels: { app: "web" } }, port: 8080 }, {
          created: "2025-01-01T00:00:00Z",
        }),
      ],
    ],
    8080,
    "b-old",
  ],
  [
    "matchExpressions select",
    [[
      "Server",
      server(NS, "expr", {
        podSelector: { matchExpressions: [{ key: "app", operator: "In", values: ["web", "api"] }] },
        port: 8080,
      }),
    ]],
    8080,
    "expr",
  ],
  [
    "NotIn excludes",
    [[
      "Server",
      server(NS, "expr", {
        podSelector: { matchExpressions: [{ key: "app", operator: "NotIn", values: ["web"] }] },
        port: 8080,
      }),
    ]],
    8080,
    "default:all-unauthenticated",
  ],
  [
    "a named port selects the container port with that name",
    [["Server", server(NS, "named", { podSelector: { matchLabels: { app: "web" } }, port: "http" })]],
    8080,
    "named",
  ],
  [
    "a named port does not select another port",
    [["Server", server(NS, "named", { podSelector: { matchLabels: { app: "web" } }, port: "http" })]],
    9090,
    "default:all-unauthenticated",
  ],
  [
    "a Server in another namespace does not select",
    [["Server", server("other", "x", { podSelector: {}, port: 8080 })]],
    8080,
    "default:all-unauthenticated",
  ],
  [
    "an empty podSelector selects every pod",
    [["Server", server(NS, "all", { podSelector: {}, port: 8080 })]],
    8080,
    "all",
  ],
];
for (const [title, objects, port, want] of precedence) {
  Deno.test(`server selection: ${title}`, () => {
    const s = policy(objects, port);
    const got = s.labels.kind === "default" ? `default:${s.labels.name}` : s.labels.name;
    assertEquals(got, want);
    if (s.labels.kind === "server") assertEquals(s.labels.group, "policy.linkerd.io");
  });
}

// --- protocols ---

const protocols: [string | undefined, string][] = [
  [undefined, "detect"],
  ["unknown", "detect"],
  ["HTTP/1", "http1"],
  ["HTTP/2", "http2"],
  ["gRPC", "grpc"],
  ["opaque", "opaque"],
  ["TLS", "tls"],
];
for (const [proxyProtocol, want] of protocols) {
  Deno.test(`proxyProtocol ${proxyProtocol ?? "(unset)"} -> ${want}`, () => {
    const s = policy([["Server", server(NS, "s", { podSelector: {}, port: 8080, proxyProtocol })]]);
    assertEquals(s.protocol?.kind?.$case, want);
  });
}

Deno.test("a Server without authorizations denies (empty authorizations)", () => {
  assertEquals(policy([["Server", server(NS, "s", { podSelector: {}, port: 8080 })]]).authorizations, []);
});

// --- identity resolution ---

const identityCases: [string, [Kind, Obj][], string, string[]][] = [
  [
    "MeshTLSAuthentication identities: exact, * and *.suffix",
    [[
      "MeshTLSAuthentication",
      meshTls(NS, "m", {
        identities: [
          "a.b.serviceaccount.identity.linkerd.cluster.local",
          "*",
          "*.emojivoto.serviceaccount.identity.linkerd.cluster.local",
        ],
      }),
    ]],
    "a.b.serviceaccount.identity.linkerd.cluster.local,*,*.emojivoto.serviceaccount.identity.linkerd.cluster.local",
    ["0.0.0.0/0", "::/0"],
  ],
  [
    "identityRefs: ServiceAccount in own and other namespace, every SA of a namespace",
    [[
      "MeshTLSAuthentication",
      meshTls(NS, "m", {
        identityRefs: [
          { kind: "ServiceAccount", name: "web" },
          { kind: "ServiceAccount", name: "vote", namespace: "voting" },
          { kind: "ServiceAccount", name: "*", namespace: "emoji" },
          { kind: "Namespace", name: "ingress" },
        ],
      }),
    ]],
    "web.emojivoto.serviceaccount.identity.weft.cluster.local,vote.voting.serviceaccount.identity.weft.cluster.local," +
    "*.emoji.serviceaccount.identity.weft.cluster.local,*.ingress.serviceaccount.identity.weft.cluster.local",
    ["0.0.0.0/0", "::/0"],
  ],
];
for (const [title, authns, wantAuthn, wantNets] of identityCases) {
  Deno.test(`identity resolution: ${title}`, () => {
    const s = policy([
      ["Server", server(NS, "s", { podSelector: {}, port: 8080 })],
      ...authns,
      [
        "AuthorizationPolicy",
        authorizationPolicy(NS, "ap", {
          targetRef: { group: "policy.linkerd.io", kind: "Server", name: "s" },
          requiredAuthenticationRefs: [{
            group: "policy.linkerd.io",
            kind: "MeshTLSAuthentication",
            name: "m",
          }],
        }),
      ],
    ]);
    assertEquals(s.authorizations.length, 1);
    assertEquals(authn(s.authorizations[0]), wantAuthn);
    assertEquals(nets(s.authorizations[0]), wantNets);
    assertEquals(s.authorizations[0].labels, {
      group: "policy.linkerd.io",
      kind: "authorizationpolicy",
      name: "ap",
    });
  });
}

Deno.test("AuthorizationPolicy: ServiceAccount ref + NetworkAuthentication combine into one authz", () => {
  const s = policy([
    ["Server", server(NS, "s", { podSelector: {}, port: 8080 })],
    [
      "NetworkAuthentication",
      networkAuthn(NS, "n", { networks: [{ cidr: "10.1.0.0/16", except: ["10.1.2.0/24"] }] }),
    ],
    [
      "AuthorizationPolicy",
      authorizationPolicy(NS, "ap", {
        targetRef: { group: "policy.linkerd.io", kind: "Server", name: "s" },
        requiredAuthenticationRefs: [
          { kind: "ServiceAccount", name: "web" },
          { group: "policy.linkerd.io", kind: "NetworkAuthentication", name: "n" },
        ],
      }),
    ],
  ]);
  assertEquals(s.authorizations.length, 1);
  assertEquals(authn(s.authorizations[0]), "web.emojivoto.serviceaccount.identity.weft.cluster.local");
  assertEquals(nets(s.authorizations[0]), ["10.1.0.0/16!"]);
});

Deno.test("AuthorizationPolicy with a missing authentication authorizes nothing", () => {
  const s = policy([
    ["Server", server(NS, "s", { podSelector: {}, port: 8080 })],
    [
      "AuthorizationPolicy",
      authorizationPolicy(NS, "ap", {
        targetRef: { group: "policy.linkerd.io", kind: "Server", name: "s" },
        requiredAuthenticationRefs: [{
          group: "policy.linkerd.io",
          kind: "MeshTLSAuthentication",
          name: "missing",
        }],
      }),
    ],
  ]);
  assertEquals(s.authorizations, []);
});

Deno.test("AuthorizationPolicy targeting the Namespace applies to its Servers", () => {
  const s = policy([
    ["Server", server(NS, "s", { podSelector: {}, port: 8080 })],
    [
      "AuthorizationPolicy",
      authorizationPolicy(NS, "ns-wide", {
        targetRef: { kind: "Namespace", name: NS },
        requiredAuthenticationRefs: [],
      }),
    ],
  ]);
  assertEquals(s.authorizations.map((a) => [a.labels.name, authn(a)]), [["ns-wide", "unauthenticated"]]);
});

Deno.test("ServerAuthorization by name and by selector; networks default to cluster networks", () => {
  const s = policy([
    ["Server", server(NS, "s", { podSelector: {}, port: 8080 }, { labels: { mode: "strict" } })],
    [
      "ServerAuthorization",
      serverAuthorization(NS, "by-name", {
        server: { name: "s" },
        client: { meshTLS: { serviceAccounts: [{ name: "web" }] } },
      }),
    ],
    [
      "ServerAuthorization",
      serverAuthorization(NS, "by-selector", {
        server: { selector: { matchLabels: { mode: "strict" } } },
        client: { unauthenticated: true, networks: [{ cidr: "192.168.0.0/16" }] },
      }),
    ],
    [
      "ServerAuthorization",
      serverAuthorization(NS, "tls", {
        server: { name: "s" },
        client: { meshTLS: { unauthenticatedTLS: true } },
      }),
    ],
    [
      "ServerAuthorization",
      serverAuthorization(NS, "other", { server: { name: "nope" }, client: { unauthenticated: true } }),
    ],
  ]);
  assertEquals(
    s.authorizations.map((a) => [a.labels.kind, a.labels.name, authn(a), nets(a).join(" ")]),
    [
      [
        "serverauthorization",
        "by-name",
        "web.emojivoto.serviceaccount.identity.weft.cluster.local",
        "10.0.0.0/8",
      ],
      ["serverauthorization", "by-selector", "unauthenticated", "192.168.0.0/16"],
      ["serverauthorization", "tls", "tls-unauthenticated", "10.0.0.0/8"],
    ],
  );
});

Deno.test("Server accessPolicy adds the default policy's authorization", () => {
  const s = policy([["Server", server(NS, "s", { podSelector: {}, port: 8080, accessPolicy: "audit" })]]);
  assertEquals(s.authorizations.map((a) => a.labels.name), ["audit"]);
});

// --- routes and probes ---

const probed = () =>
  pod(NS, "web-1", { app: "web" }, {
    containers: [{
      name: "app",
      ports: [{ name: "http", containerPort: 8080 }],
      livenessProbe: { httpGet: { path: "/live", port: "http" } },
      readinessProbe: { httpGet: { path: "/ready", port: 8080 } },
      startupProbe: { httpGet: { path: "/other-port", port: 9000 } },
    }],
  });

const attachToS = { parentRefs: [{ group: "policy.linkerd.io", kind: "Server", name: "s" }] };

const routeCases: [string, [Kind, Obj][], string[]][] = [
  ["default policy: default route + probe route", [], ["default:default", "default:probe"]],
  ["Server without routes: default route + probe route", [[
    "Server",
    server(NS, "s", { podSelector: {}, port: 8080 }),
  ]], [
    "default:default",
    "default:probe",
  ]],
  [
    "attached policy.linkerd.io HTTPRoute replaces the defaults (probes no longer authorized)",
    [
      ["Server", server(NS, "s", { podSelector: {}, port: 8080 })],
      [
        "HTTPRoute",
        httpRoute(NS, "r", {
          ...attachToS,
          rules: [{ matches: [{ path: { type: "PathPrefix", value: "/api" } }] }],
        }),
      ],
    ],
    ["HTTPRoute:r"],
  ],
  [
    "Gateway API HTTPRoutes attach too, oldest first",
    [
      ["Server", server(NS, "s", { podSelector: {}, port: 8080 })],
      [
        "GatewayHTTPRoute",
        httpRoute(NS, "new", { ...attachToS, rules: [{}] }, { created: "2025-02-01T00:00:00Z" }),
      ],
      ["HTTPRoute", httpRoute(NS, "old", { ...attachToS, rules: [{}] }, { created: "2025-01-01T00:00:00Z" })],
    ],
    ["HTTPRoute:old", "HTTPRoute:new"],
  ],
  [
    "a route for another Server does not attach",
    [
      ["Server", server(NS, "s", { podSelector: {}, port: 8080 })],
      [
        "HTTPRoute",
        httpRoute(NS, "r", { parentRefs: [{ group: "policy.linkerd.io", kind: "Server", name: "t" }] }),
      ],
    ],
    ["default:default", "default:probe"],
  ],
  [
    "a route with an invalid regex is ignored",
    [
      ["Server", server(NS, "s", { podSelector: {}, port: 8080 })],
      [
        "HTTPRoute",
        httpRoute(NS, "bad", {
          ...attachToS,
          rules: [{ matches: [{ path: { type: "RegularExpression", value: "([" } }] }],
        }),
      ],
    ],
    ["default:default", "default:probe"],
  ],
];
for (const [title, objects, want] of routeCases) {
  Deno.test(`routes: ${title}`, () => {
    assertEquals(httpRoutes(policy(objects, 8080, probed())).map(routeName), want);
  });
}

Deno.test("probe route: exact GET matches on the port's probe paths, from the probe networks, unauthenticated", () => {
  const routes = httpRoutes(policy([], 8080, probed()));
  const probe = routes[1];
  assertEquals(probe.rules[0].matches.map((m) => m.path?.kind), [
    { $case: "exact", value: "/live" },
    { $case: "exact", value: "/ready" },
  ]);
  assertEquals(probe.rules[0].matches[0].method, { type: { $case: "registered", value: 0 } });
  assertEquals(probe.authorizations.map((a) => [authn(a), nets(a)]), [["unauthenticated", [
    "0.0.0.0/0",
    "::/0",
  ]]]);
  // Another port has its own probe path; a port without probes has no probe route.
  assertEquals(httpRoutes(policy([], 9000, probed()))[1].rules[0].matches.length, 1);
  assertEquals(httpRoutes(policy([], 7000, probed())).map(routeName), ["default:default"]);
});

Deno.test("probe routes are off when probeNetworks is empty", () => {
  const s = inboundPolicy(
    storeWith(["Pod", probed()]),
    defaultPolicyConfig({ probeNetworks: [] }),
    NS,
    "web-1",
    8080,
  );
  assertEquals(httpRoutes(s).map(routeName), ["default:default"]);
});

Deno.test("route conversion and route-targeted authorization", () => {
  const s = policy([
    ["Server", server(NS, "s", { podSelector: {}, port: 8080, proxyProtocol: "HTTP/1" })],
    [
      "HTTPRoute",
      httpRoute(NS, "r", {
        ...attachToS,
        hostnames: ["web.example.com", "*.example.com"],
        rules: [{
          matches: [{
            path: { type: "Exact", value: "/vote" },
            headers: [{ name: "x-user", value: "a.*", type: "RegularExpression" }],
            queryParams: [{ name: "q", value: "1" }],
            method: "POST",
          }],
          filters: [{
            type: "RequestHeaderModifier",
            requestHeaderModifier: { set: [{ name: "x-a", value: "1" }], remove: ["x-b"] },
          }],
        }],
      }),
    ],
    ["MeshTLSAuthentication", meshTls(NS, "m", { identityRefs: [{ kind: "ServiceAccount", name: "web" }] })],
    [
      "AuthorizationPolicy",
      authorizationPolicy(NS, "route-ap", {
        targetRef: { group: "policy.linkerd.io", kind: "HTTPRoute", name: "r" },
        requiredAuthenticationRefs: [{
          group: "policy.linkerd.io",
          kind: "MeshTLSAuthentication",
          name: "m",
        }],
      }),
    ],
    [
      "AuthorizationPolicy",
      authorizationPolicy(NS, "server-ap", {
        targetRef: { group: "policy.linkerd.io", kind: "Server", name: "s" },
        requiredAuthenticationRefs: [],
      }),
    ],
  ]);
  // Route-targeted policies sit on the route; Server-targeted ones on the Server, as in Linkerd.
  assertEquals(s.authorizations.map((a) => a.labels.name), ["server-ap"]);
  const [r] = httpRoutes(s);
  assertEquals(r.metadata, {
    kind: {
      $case: "resource",
      value: {
        group: "policy.linkerd.io",
        kind: "HTTPRoute",
        name: "r",
        namespace: NS,
        section: "",
        port: 0,
      },
    },
  });
  assertEquals(r.authorizations.map((a) => a.labels.name), ["route-ap"]);
  assertEquals(r.hosts, [
    { match: { $case: "exact", value: "web.example.com" } },
    { match: { $case: "suffix", value: { reverseLabels: ["com", "example"] } } },
  ]);
  const m = r.rules[0].matches[0];
  assertEquals(m.path, { kind: { $case: "exact", value: "/vote" } });
  assertEquals(m.headers, [{ name: "x-user", value: { $case: "regex", value: "a.*" } }]);
  assertEquals(m.queryParams, [{ name: "q", value: { $case: "exact", value: "1" } }]);
  assertEquals(m.method, { type: { $case: "registered", value: 1 } });
  assertEquals(r.rules[0].filters[0].kind?.$case, "requestHeaderModifier");
});

Deno.test("gRPC Server: GRPCRoutes attach; default gRPC route without them", () => {
  const objs: [Kind, Obj][] = [[
    "Server",
    server(NS, "s", { podSelector: {}, port: 8080, proxyProtocol: "gRPC" }),
  ]];
  const k0 = policy(objs).protocol?.kind;
  if (k0?.$case !== "grpc") throw new Error("want grpc");
  assertEquals(k0.value.routes.map(routeName), ["default:default"]);
  const k1 = policy([
    ...objs,
    [
      "GRPCRoute",
      grpcRoute(NS, "g", {
        ...attachToS,
        rules: [{ matches: [{ method: { service: "emojivoto.v1.EmojiService", method: "ListAll" } }] }],
      }),
    ],
  ]).protocol?.kind;
  if (k1?.$case !== "grpc") throw new Error("want grpc");
  assertEquals(k1.value.routes.map(routeName), ["GRPCRoute:g"]);
  assertEquals(k1.value.routes[0].rules[0].matches[0].rpc, {
    service: "emojivoto.v1.EmojiService",
    method: "ListAll",
  });
});
