// The pure parts of `weft diagnostics`: argument parsing, the choice of a pod, and what the tables
// and JSON show of the messages a proxy receives.
import assert from "node:assert/strict";
import type { V1Pod } from "@kubernetes/client-node";
import { toIpAddress, toIpNetwork, toTcpAddress } from "../../proto/ip.ts";
import type { DestinationProfile, OutboundPolicy, Server, Update } from "../../proxy/discovery/requests.ts";
import { endpointRows, endpointSet, parseAuthority, renderEndpoints } from "./endpoints.ts";
import { messageJson } from "./message_json.ts";
import { controllerAdminPorts, hasProxy } from "./metrics.ts";
import { inboundSummary, renderInbound, renderOutbound } from "./policy.ts";
import { describeMatch, renderProfile } from "./profile.ts";
import { parseResource, pickReadyPod, serviceOfHost } from "./resource.ts";

Deno.test("diagnostics: resources as kubectl spells them, and clear errors otherwise", () => {
  assert.deepEqual(parseResource("deploy/web"), { kind: "deployment", name: "web" });
  assert.deepEqual(parseResource("po/web-0"), { kind: "pod", name: "web-0" });
  assert.deepEqual(parseResource("svc/web"), { kind: "service", name: "web" });
  assert.deepEqual(parseResource("web-0"), { kind: "pod", name: "web-0" });
  assert.throws(() => parseResource("cm/web"), /unknown resource kind "cm"/);
  assert.throws(() => parseResource("deploy/Web_1"), /not a Kubernetes object name/);
});

Deno.test("diagnostics: a Service from its cluster name", () => {
  assert.deepEqual(serviceOfHost("web.shop.svc.cluster.local"), { name: "web", namespace: "shop" });
  assert.deepEqual(serviceOfHost("web.shop.svc"), { name: "web", namespace: "shop" });
  assert.deepEqual(serviceOfHost("web.shop.svc.example.org."), { name: "web", namespace: "shop" });
  assert.equal(serviceOfHost("web"), undefined);
  assert.equal(serviceOfHost("10.96.0.10"), undefined);
  assert.equal(serviceOfHost("web.shop.pod.cluster.local"), undefined);
});

Deno.test("diagnostics: authorities need a port", () => {
  assert.deepEqual(parseAuthority("web.ns.svc.cluster.local:80"), {
    host: "web.ns.svc.cluster.local",
    port: 80,
  });
  assert.deepEqual(parseAuthority("10.0.0.1:8080"), { host: "10.0.0.1", port: 8080 });
  assert.throws(() => parseAuthority("web.ns.svc.cluster.local"), /not an authority/);
  assert.throws(() => parseAuthority("web:0"), /not an authority/);
  assert.throws(() => parseAuthority("web:70000"), /not an authority/);
});

function pod(name: string, ready: boolean, phase = "Running"): V1Pod {
  return {
    metadata: { name },
    status: { phase, conditions: [{ type: "Ready", status: ready ? "True" : "False" }] },
  };
}

Deno.test("diagnostics: a deployment stands for its first ready pod by name", () => {
  assert.equal(pickReadyPod([pod("b", true), pod("a", false), pod("c", true)], "d").metadata?.name, "b");
  assert.throws(
    () => pickReadyPod([pod("a", false)], "deployment ns/web"),
    /deployment ns\/web has no ready pod/,
  );
  assert.throws(() => pickReadyPod([], "deployment ns/web"), /has no pods/);
});

Deno.test("diagnostics: controller admin ports by name, the proxy's admin port excluded", () => {
  const p: V1Pod = {
    spec: {
      containers: [
        {
          name: "destination",
          ports: [{ name: "grpc", containerPort: 8086 }, { name: "admin-http", containerPort: 9996 }],
        },
        { name: "policy", ports: [{ name: "policy-admin", containerPort: 9990 }] },
        { name: "linkerd-proxy", ports: [{ name: "linkerd-admin", containerPort: 4191 }] },
      ],
    },
  };
  assert.deepEqual(controllerAdminPorts(p), [
    { container: "destination", port: 9996 },
    { container: "policy", port: 9990 },
  ]);
  assert.ok(hasProxy(p));
  assert.ok(!hasProxy({ spec: { containers: [{ name: "app" }] } }));
  assert.ok(hasProxy({ spec: { containers: [], initContainers: [{ name: "linkerd-proxy" }] } }));
});

const ID = "web.shop.serviceaccount.identity.weft.cluster.local";

function add(ips: string[], port: number): Update {
  return {
    update: {
      $case: "add",
      value: {
        addrs: ips.map((ip) => ({
          addr: toTcpAddress(ip, port),
          weight: 10000,
          metricLabels: { pod: `web-${ip.split(".").pop()}` },
          tlsIdentity: {
            strategy: { $case: "dnsLikeIdentity", value: { name: ID } },
            serverName: { name: ID },
          },
          authorityOverride: undefined,
          protocolHint: undefined,
          http2: undefined,
          resourceRef: undefined,
        })),
        metricLabels: { namespace: "shop", service: "web" },
      },
    },
  };
}

Deno.test("diagnostics endpoints: the proxy's reduction of Get updates, sorted by address", () => {
  const updates: Update[] = [
    add(["10.0.0.10", "10.0.0.9"], 8080),
    add(["10.0.0.11"], 8080),
    { update: { $case: "remove", value: { addrs: [toTcpAddress("10.0.0.10", 8080)] } } },
  ];
  const rows = endpointRows("web.shop.svc.cluster.local:80", endpointSet(updates));
  assert.deepEqual(rows.map((r) => r.ip), ["10.0.0.9", "10.0.0.11"]);
  assert.deepEqual(rows[0], {
    authority: "web.shop.svc.cluster.local:80",
    namespace: "shop",
    ip: "10.0.0.9",
    port: 8080,
    pod: "web-9",
    service: "web",
    identity: ID,
  });
  const text = renderEndpoints(rows, ["gone.shop.svc.cluster.local:80"]);
  const lines = text.trimEnd().split("\n");
  assert.match(lines[0], /^AUTHORITY\s+NAMESPACE\s+IP\s+PORT\s+POD\s+SERVICE\s+IDENTITY$/);
  // Columns are aligned: every row's IP starts where the header's does.
  assert.equal(lines[1].indexOf("10.0.0.9"), lines[0].indexOf("IP"));
  assert.equal(lines[3], "gone.shop.svc.cluster.local:80: no endpoints");
  // A NoEndpoints update empties the set, as in the proxy.
  const none = endpointSet([...updates, { update: { $case: "noEndpoints", value: { exists: true } } }]);
  assert.equal(none.endpoints.size, 0);
});

const SERVER: Server = {
  protocol: {
    kind: {
      $case: "http1",
      value: {
        routes: [{
          metadata: { kind: { $case: "resource", value: res("HTTPRoute", "items") } },
          hosts: [],
          authorizations: [{
            networks: [],
            authentication: { permit: { $case: "unauthenticated", value: {} } },
            labels: {},
            metadata: { kind: { $case: "resource", value: res("AuthorizationPolicy", "items-open") } },
          }],
          rules: [],
        }],
        localRateLimit: undefined,
      },
    },
  },
  serverIps: [],
  authorizations: [{
    networks: [{ net: toIpNetwork("10.244.0.0/16"), except: [toIpNetwork("10.244.1.0/24")] }],
    authentication: {
      permit: {
        $case: "meshTLS",
        value: {
          clients: {
            $case: "identities",
            value: { identities: [{ name: ID }], suffixes: [{ parts: ["shop", "serviceaccount"] }] },
          },
        },
      },
    },
    labels: {},
    metadata: { kind: { $case: "resource", value: res("AuthorizationPolicy", "web-authz") } },
  }],
  labels: { group: "policy.linkerd.io", kind: "server", name: "web-http" },
};

function res(kind: string, name: string) {
  return { group: "policy.linkerd.io", kind, name, namespace: "", section: "", port: 0 };
}

Deno.test("diagnostics policy: inbound server, its authorizations and route authorizations", () => {
  const s = inboundSummary(SERVER);
  assert.deepEqual(s, {
    server: "server/web-http",
    protocol: "http1",
    authorizations: [{
      name: "authorizationpolicy/web-authz",
      networks: "10.244.0.0/16 except 10.244.1.0/24",
      authentication: `meshTLS: ${ID}, *.shop.serviceaccount`,
    }],
    routes: [{ name: "httproute/items", authorizations: ["authorizationpolicy/items-open"] }],
  });
  const text = renderInbound("pod/shop/web-0", 8080, SERVER);
  assert.match(text, /^server: +server\/web-http$/m);
  assert.match(
    text,
    /^authorizationpolicy\/web-authz +10\.244\.0\.0\/16 except 10\.244\.1\.0\/24 +meshTLS: /m,
  );
});

Deno.test("diagnostics policy: outbound routes and their backends", () => {
  const backend = (name: string, path: string) => ({
    metadata: { kind: { $case: "resource" as const, value: { ...res("Service", name), group: "core" } } },
    queue: undefined,
    kind: {
      $case: "balancer" as const,
      value: { discovery: { kind: { $case: "dst" as const, value: { path } } }, load: undefined },
    },
  });
  const p = {
    metadata: {
      kind: { $case: "resource", value: { ...res("Service", "web"), group: "core", namespace: "shop" } },
    },
    protocol: {
      kind: {
        $case: "http1",
        value: {
          failureAccrual: undefined,
          routes: [{
            metadata: { kind: { $case: "resource", value: res("HTTPRoute", "split") } },
            hosts: [],
            rules: [{
              matches: [],
              filters: [],
              backends: {
                kind: {
                  $case: "randomAvailable",
                  value: {
                    backends: [
                      {
                        weight: 90,
                        backend: {
                          backend: backend("web-v1", "web-v1.shop.svc.cluster.local:80"),
                          filters: [],
                        },
                      },
                      {
                        weight: 10,
                        backend: {
                          backend: backend("web-v2", "web-v2.shop.svc.cluster.local:80"),
                          filters: [],
                        },
                      },
                    ],
                  },
                },
              },
            }],
          }],
        },
      },
    },
  } as unknown as OutboundPolicy;
  const text = renderOutbound("svc/web.shop (10.96.0.10:80)", p);
  assert.match(text, /^resource: service\/shop\/web$/m);
  assert.match(
    text,
    /^httproute\/split +service\/web-v1 \(web-v1\.shop\.svc\.cluster\.local:80\) w=90, service\/web-v2 \(web-v2\.shop\.svc\.cluster\.local:80\) w=10$/m,
  );
});

Deno.test("diagnostics profile: routes with their conditions, retries and timeouts", () => {
  const p: DestinationProfile = {
    routes: [{
      condition: {
        match: {
          $case: "all",
          value: {
            matches: [
              { match: { $case: "method", value: { type: { $case: "registered", value: 0 } } } },
              { match: { $case: "path", value: { regex: "/items/[0-9]+" } } },
            ],
          },
        },
      },
      responseClasses: [],
      metricsLabels: { route: "GET /items/{id}" },
      isRetryable: true,
      timeout: { seconds: 1n, nanos: 500_000_000 },
    }],
    retryBudget: {
      retryRatio: 0.20000000298023224,
      minRetriesPerSecond: 10,
      ttl: { seconds: 10n, nanos: 0 },
    },
    dstOverrides: [],
    opaqueProtocol: false,
    fullyQualifiedName: "web.shop.svc.cluster.local",
    endpoint: undefined,
    parentRef: undefined,
    profileRef: undefined,
  };
  assert.equal(describeMatch(p.routes[0].condition), "method=GET && path=/items/[0-9]+");
  assert.equal(
    describeMatch({ match: { $case: "not", value: { match: { $case: "path", value: { regex: "/x" } } } } }),
    "not(path=/x)",
  );
  const text = renderProfile("web.shop.svc.cluster.local:80", p);
  assert.match(text, /^profile: +web\.shop\.svc\.cluster\.local$/m);
  assert.match(text, /^retryBudget: ratio 0\.2, min 10\/s, ttl 10s$/m);
  assert.match(text, /^GET \/items\/\{id\} +method=GET && path=\/items\/\[0-9\]\+ +true +1\.5s +0$/m);
});

Deno.test("diagnostics -o json: oneofs as {case: value}, addresses as text, durations and int64 as strings", () => {
  const j = messageJson({
    a: { $case: "addr", value: toTcpAddress("10.1.2.3", 80) },
    v6: toIpAddress("fd00::1"),
    d: { seconds: 3n, nanos: 250_000_000 },
    big: 1n << 40n,
    bytes: new Uint8Array([1, 2, 3]),
    skip: undefined,
  });
  assert.deepEqual(j, {
    a: { addr: { ip: "10.1.2.3", port: 80 } },
    v6: "fd00::1",
    d: "3.25s",
    big: "1099511627776",
    bytes: "AQID",
  });
});
