import { assertEquals, assertThrows } from "./assert.ts";
import type { Backend, HttpRoute, OutboundPolicy, TrafficSpec } from "../../proto/gen/outbound.ts";
import { toTcpAddress } from "../../proto/ip.ts";
import { RequestError } from "../grpc/request_error.ts";
import { defaultPolicyConfig } from "./config.ts";
import { outboundPolicy } from "./outbound_index.ts";
import { parseStatusRanges } from "./outbound_annotations.ts";
import type { Kind, Obj } from "./resources.ts";
import { grpcRoute, httpRoute, pod, service, storeWith } from "./testing.ts";

const cfg = defaultPolicyConfig();
const NS = "emojivoto";
const web = (annotations?: Record<string, string>) =>
  service(NS, "web-svc", {
    clusterIP: "10.96.0.10",
    ports: [{ name: "http", port: 80 }, { name: "db", port: 3306 }],
  }, annotations);
const addr = (ip: string, port: number, src = '{"ns":"emojivoto","pod":"vote-bot"}'): TrafficSpec => ({
  sourceWorkload: src,
  target: { $case: "addr", value: toTcpAddress(ip, port) },
});
const get = (objects: [Kind, Obj][], spec: TrafficSpec) => outboundPolicy(storeWith(...objects), cfg, spec);

function http1Routes(p: OutboundPolicy): HttpRoute[] {
  const k = p.protocol?.kind;
  if (k?.$case === "detect") return k.value.http1!.routes;
  if (k?.$case === "http1" || k?.$case === "http2") return k.value.routes;
  throw new Error(`no http routes in ${k?.$case}`);
}
function firstBackend(r: HttpRoute, rule = 0): Backend {
  const d = r.rules[rule].backends?.kind;
  if (d?.$case === "firstAvailable") return d.value.backends[0].backend!;
  if (d?.$case === "randomAvailable") return d.value.backends[0].backend!.backend!;
  throw new Error("no backend");
}

Deno.test("Service ClusterIP:port gets a balancer backend with discovery path, peak EWMA and queue", () => {
  const p = get([["Service", web()]], addr("10.96.0.10", 80));
  assertEquals(p.metadata, {
    kind: {
      $case: "resource",
      value: { group: "core", kind: "Service", name: "web-svc", namespace: NS, section: "", port: 80 },
    },
  });
  const k = p.protocol?.kind;
  assertEquals(k?.$case, "detect");
  if (k?.$case !== "detect") return;
  assertEquals(k.value.timeout, { seconds: 10n, nanos: 0 });
  for (const part of [k.value.opaque, k.value.http1, k.value.http2]) {
    if (!part) throw new Error("detect needs all parts");
  }
  const b = firstBackend(k.value.http1!.routes[0]);
  assertEquals(b.queue, { capacity: 100, failfastTimeout: { seconds: 3n, nanos: 0 } });
  assertEquals(b.kind, {
    $case: "balancer",
    value: {
      discovery: { kind: { $case: "dst", value: { path: "web-svc.emojivoto.svc.cluster.local:80" } } },
      load: {
        $case: "peakEwma",
        value: { defaultRtt: { seconds: 0n, nanos: 30_000_000 }, decay: { seconds: 10n, nanos: 0 } },
      },
    },
  });
  assertEquals(k.value.http1!.routes[0].metadata, { kind: { $case: "default", value: "http" } });
});

const targets: [string, [Kind, Obj][], TrafficSpec, string][] = [
  ["authority with cluster domain and port", [["Service", web()]], {
    sourceWorkload: "",
    target: { $case: "authority", value: "web-svc.emojivoto.svc.cluster.local:80" },
  }, "service"],
  ["authority without domain", [["Service", web()]], {
    sourceWorkload: "",
    target: { $case: "authority", value: "web-svc.emojivoto.svc:80" },
  }, "service"],
  [
    "pod IP: forward fallback",
    [["Pod", pod(NS, "p", {}, { ip: "10.244.0.7" })]],
    addr("10.244.0.7", 8080),
    "fallback",
  ],
  ["unknown address: forward fallback", [], addr("192.0.2.1", 443), "fallback"],
  [
    "ClusterIP on a port the Service lacks: fallback",
    [["Service", web()]],
    addr("10.96.0.10", 81),
    "fallback",
  ],
];
for (const [title, objects, spec, want] of targets) {
  Deno.test(`target: ${title}`, () => {
    const p = get(objects, spec);
    const got = p.metadata?.kind?.$case === "resource" ? "service" : "fallback";
    assertEquals(got, want);
    if (want === "fallback") {
      assertEquals(p.metadata, { kind: { $case: "default", value: "egress-fallback" } });
      const b = firstBackend(http1Routes(p)[0]);
      assertEquals(b.kind?.$case, "forward");
      if (b.kind?.$case === "forward" && spec.target?.$case === "addr") {
        assertEquals(b.kind.value.addr, spec.target.value);
      }
      assertEquals(http1Routes(p)[0].rules[0].matches.length, 1);
    }
  });
}

const badTargets: [string, TrafficSpec, string, string][] = [
  ["no target", { sourceWorkload: "" }, "invalid_argument", "TrafficSpec has no target"],
  ["port 0", addr("10.0.0.1", 0), "invalid_argument", "port 0"],
  [
    "authority outside the cluster",
    { sourceWorkload: "", target: { $case: "authority", value: "example.com:443" } },
    "not_found",
    "not a Service",
  ],
  [
    "authority of a missing Service",
    { sourceWorkload: "", target: { $case: "authority", value: "nope.emojivoto.svc.cluster.local:80" } },
    "not_found",
    "nope not found",
  ],
];
for (const [title, spec, kind, text] of badTargets) {
  Deno.test(`bad target: ${title}`, () => {
    const e = assertThrows(() => get([["Service", web()]], spec), RequestError);
    assertEquals(e.kind, kind);
    if (!e.message.includes(text)) throw new Error(`"${e.message}" lacks "${text}"`);
  });
}

Deno.test("opaque port (annotation) gets an opaque route to the Service", () => {
  const p = get([["Service", web({ "config.linkerd.io/opaque-ports": "3306" })]], addr("10.96.0.10", 3306));
  const k = p.protocol?.kind;
  assertEquals(k?.$case, "opaque");
  if (k?.$case === "opaque") {
    const d = k.value.routes[0].rules[0].backends?.kind;
    assertEquals(d?.$case, "firstAvailable");
  }
});

const toWeb = { parentRefs: [{ group: "core", kind: "Service", name: "web-svc", port: 80 }] };

Deno.test("HTTPRoute on the Service: matches, filters, weighted backends, missing backend, timeouts", () => {
  const p = get([
    ["Service", web()],
    ["Service", service(NS, "web-v2", { clusterIP: "10.96.0.11", ports: [{ port: 80 }] })],
    [
      "GatewayHTTPRoute",
      httpRoute(NS, "split", {
        ...toWeb,
        rules: [{
          matches: [{ path: { type: "PathPrefix", value: "/api" } }],
          filters: [{
            type: "ResponseHeaderModifier",
            responseHeaderModifier: { add: [{ name: "x-split", value: "yes" }] },
          }],
          backendRefs: [{ name: "web-svc", port: 80, weight: 90 }, { name: "web-v2", port: 80, weight: 10 }, {
            name: "gone",
            port: 80,
            weight: 0,
          }],
          timeouts: { request: "5s", backendRequest: "1s" },
        }],
      }),
    ],
  ], addr("10.96.0.10", 80));
  const [r] = http1Routes(p);
  assertEquals(r.metadata, {
    kind: {
      $case: "resource",
      value: {
        group: "gateway.networking.k8s.io",
        kind: "HTTPRoute",
        name: "split",
        namespace: NS,
        section: "",
        port: 0,
      },
    },
  });
  const rule = r.rules[0];
  assertEquals(rule.matches[0].path, { kind: { $case: "prefix", value: "/api" } });
  assertEquals(rule.filters[0].kind?.$case, "responseHeaderModifier");
  const d = rule.backends?.kind;
  if (d?.$case !== "randomAvailable") throw new Error("want randomAvailable");
  assertEquals(d.value.backends.map((b) => b.weight), [90, 10, 0]);
  const paths = d.value.backends.map((b) => {
    const k = b.backend!.backend!.kind;
    return k?.$case === "balancer" && k.value.discovery?.kind?.$case === "dst"
      ? k.value.discovery.kind.value.path
      : "(none)";
  });
  assertEquals(paths, [
    "web-svc.emojivoto.svc.cluster.local:80",
    "web-v2.emojivoto.svc.cluster.local:80",
    "(none)",
  ]);
  assertEquals(rule.timeouts, {
    request: { seconds: 5n, nanos: 0 },
    response: { seconds: 1n, nanos: 0 },
    idle: undefined,
  });
  assertEquals(rule.retry, undefined);
});

Deno.test("a route for another port does not attach", () => {
  const p = get([
    ["Service", web()],
    [
      "HTTPRoute",
      httpRoute(NS, "r", { parentRefs: [{ kind: "Service", name: "web-svc", port: 3306 }], rules: [{}] }),
    ],
  ], addr("10.96.0.10", 80));
  assertEquals(http1Routes(p)[0].metadata, { kind: { $case: "default", value: "http" } });
});

Deno.test("retry and timeout annotations: route overrides Service, annotation overrides field", () => {
  const p = get([
    [
      "Service",
      web({
        "retry.linkerd.io/http": "5xx",
        "retry.linkerd.io/limit": "3",
        "timeout.linkerd.io/request": "9s",
      }),
    ],
    [
      "HTTPRoute",
      httpRoute(NS, "r", { ...toWeb, rules: [{ timeouts: { request: "5s" } }] }, {
        annotations: {
          "retry.linkerd.io/http": "502-504,429",
          "retry.linkerd.io/timeout": "300ms",
          "timeout.linkerd.io/idle": "1m",
        },
      }),
    ],
  ], addr("10.96.0.10", 80));
  const rule = http1Routes(p)[0].rules[0];
  assertEquals(rule.retry?.maxRetries, 3);
  assertEquals(rule.retry?.maxRequestBytes, 65536);
  assertEquals(rule.retry?.conditions?.statusRanges, [{ start: 502, end: 504 }, { start: 429, end: 429 }]);
  assertEquals(rule.retry?.timeout, { seconds: 0n, nanos: 300_000_000 });
  assertEquals(rule.timeouts, {
    request: { seconds: 9n, nanos: 0 },
    response: undefined,
    idle: { seconds: 60n, nanos: 0 },
  });
});

Deno.test("failure accrual from balancer.linkerd.io annotations", () => {
  const p = get([[
    "Service",
    web({
      "balancer.linkerd.io/failure-accrual": "consecutive",
      "balancer.linkerd.io/failure-accrual-consecutive-max-failures": "4",
      "balancer.linkerd.io/failure-accrual-consecutive-min-penalty": "2s",
    }),
  ]], addr("10.96.0.10", 80));
  const k = p.protocol?.kind;
  if (k?.$case !== "detect") throw new Error("want detect");
  assertEquals(k.value.http1?.failureAccrual, {
    kind: {
      $case: "consecutiveFailures",
      value: {
        maxFailures: 4,
        backoff: {
          minBackoff: { seconds: 2n, nanos: 0 },
          maxBackoff: { seconds: 60n, nanos: 0 },
          jitterRatio: 0.5,
          respectRetryAfterHint: false,
        },
      },
    },
  });
  const plain = get([["Service", web()]], addr("10.96.0.10", 80)).protocol?.kind;
  if (plain?.$case === "detect") assertEquals(plain.value.http1?.failureAccrual, undefined);
});

Deno.test("GRPCRoute on the Service makes the protocol gRPC with gRPC retries", () => {
  const p = get([
    ["Service", web({ "retry.linkerd.io/grpc": "unavailable,internal" })],
    [
      "GRPCRoute",
      grpcRoute(NS, "g", {
        ...toWeb,
        rules: [{ matches: [{ method: { service: "emojivoto.v1.VotingService" } }] }],
      }),
    ],
  ], addr("10.96.0.10", 80));
  const k = p.protocol?.kind;
  if (k?.$case !== "grpc") throw new Error(`want grpc, got ${k?.$case}`);
  const rule = k.value.routes[0].rules[0];
  assertEquals(rule.matches[0].rpc, { service: "emojivoto.v1.VotingService", method: "" });
  assertEquals(rule.retry?.conditions, {
    cancelled: false,
    deadineExceeded: false,
    resourceExhausted: false,
    internal: true,
    unavailable: true,
  });
});

Deno.test("consumer routes in the client's namespace win over the Service's own routes", () => {
  const objects: [Kind, Obj][] = [
    ["Service", web()],
    ["HTTPRoute", httpRoute(NS, "producer", { ...toWeb, rules: [{}] })],
    [
      "HTTPRoute",
      httpRoute("client-ns", "consumer", {
        parentRefs: [{ kind: "Service", name: "web-svc", namespace: NS, port: 80 }],
        rules: [{}],
      }),
    ],
  ];
  const name = (p: OutboundPolicy) => {
    const m = http1Routes(p)[0].metadata?.kind;
    return m?.$case === "resource" ? m.value.name : "default";
  };
  assertEquals(name(get(objects, addr("10.96.0.10", 80, '{"ns":"client-ns","pod":"c"}'))), "consumer");
  assertEquals(name(get(objects, addr("10.96.0.10", 80, '{"ns":"elsewhere","pod":"c"}'))), "producer");
});

const statusCases: [string, { start: number; end: number }[] | string][] = [
  ["5xx", [{ start: 500, end: 599 }]],
  ["500-504,429", [{ start: 500, end: 504 }, { start: 429, end: 429 }]],
  ["teapot", "not a status code"],
];
for (const [text, want] of statusCases) {
  Deno.test(`retry status ranges ${text}`, () => {
    if (typeof want === "string") {
      const e = assertThrows(() => parseStatusRanges(text));
      if (!e.message.includes(want)) throw new Error(e.message);
    } else assertEquals(parseStatusRanges(text), want);
  });
}
