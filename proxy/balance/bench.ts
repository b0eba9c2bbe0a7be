/**
 * Micro-benchmark of the per-request HTTP policy work: P2C pick + completion, outbound route match,
 * weighted backend choice, inbound route authorization — each against a naive baseline measured in
 * the same run (uniform random pick, Map lookup by path). Prints one line per case, then one JSON
 * object as the last line.
 *
 *   npx --yes deno@2.9.6 run -A proxy/balance/bench.ts
 */
import type { HttpRoute } from "../../proto/gen_messages/outbound.ts";
import { toIpAddress } from "../../proto/ip.ts";
import { compileHttpServer, HttpAuthorizer } from "../inbound/http/authorize.ts";
import { compileOutboundPolicy } from "../route/outbound.ts";
import {
  balancerBackend,
  enc,
  httpRoute,
  pathExact,
  pathPrefix,
  pathRegex,
  request,
  rule,
} from "../route/testing.ts";
import { Balancer } from "./balancer.ts";
import { seededRng } from "../core/rng.ts";

const BUDGET_MS = 400;

/** ns per call of `f`, over as many batches as fit in the time budget (after a warm-up). */
function measure(f: () => void): number {
  for (let i = 0; i < 20_000; i++) f();
  let n = 0;
  const t0 = performance.now();
  let t = t0;
  while (t - t0 < BUDGET_MS) {
    for (let i = 0; i < 10_000; i++) f();
    n += 10_000;
    t = performance.now();
  }
  return ((t - t0) * 1e6) / n;
}

const rng = seededRng(1);
let sink = 0;

// --- balancer: 3 and 100 endpoints, pick + done per request.
function balancerCase(size: number) {
  const b = new Balancer<{ i: number }>({ rng });
  b.update(new Map(Array.from({ length: size }, (_, i) => [`10.0.${i >> 8}.${i & 255}:8080`, { i }])));
  return () => {
    const l = b.pick()!;
    sink += l.endpoint.i;
    l.done(true);
  };
}
/** The same with the caller passing its clock reading (as when latency metrics already read it). */
function balancerSharedNow(size: number) {
  const b = new Balancer<{ i: number }>({ rng });
  b.update(new Map(Array.from({ length: size }, (_, i) => [`10.0.${i >> 8}.${i & 255}:8080`, { i }])));
  let now = performance.timeOrigin + performance.now();
  return () => {
    const l = b.pick(now)!;
    sink += l.endpoint.i;
    now += 0.05;
    l.done(true, now);
  };
}
const naivePick = (size: number) => {
  const eps = Array.from({ length: size }, (_, i) => ({ i }));
  return () => {
    sink += eps[(rng() * eps.length) | 0].i;
  };
};

// --- outbound routes: 20 routes with prefixes, exact paths, a regex and header matches.
const routes: HttpRoute[] = [];
for (let i = 0; i < 20; i++) {
  routes.push(httpRoute(`r${i}`, [
    rule([pathPrefix(`/api/v${i}`)]),
    rule([{
      ...pathExact(`/api/v${i}/items`),
      headers: [{ name: "x-tenant", value: { $case: "exact", value: enc("t1") } }],
    }]),
    rule([pathRegex(`/api/v${i}/items/[0-9]+`)]),
  ]));
}
routes.push(httpRoute("fallback", [rule([])]));
const outbound = compileOutboundPolicy({
  metadata: { kind: { $case: "default", value: "bench" } },
  protocol: { kind: { $case: "http1", value: { routes } } },
});
const reqs = [
  request("GET", "/api/v7/items/1234"),
  request("GET", "/api/v19/items", undefined, ["x-tenant", "t1", "accept", "*/*"]),
  request("GET", "/api/v3/other?x=1"),
  request("GET", "/healthz"),
];
let k = 0;
const routeMatch = () => {
  const h = outbound.find(reqs[k++ & 3])!;
  sink += h.matcher.prefixLength;
};
const byPath = new Map<string, number>(routes.map((_, i) => [`/api/v${i}/items`, i]));
const mapLookup = () => {
  const r = reqs[k++ & 3];
  const q = r.path.indexOf("?");
  sink += byPath.get(q < 0 ? r.path : r.path.slice(0, q)) ?? 0;
};

const small = compileOutboundPolicy({
  metadata: { kind: { $case: "default", value: "small" } },
  protocol: {
    kind: {
      $case: "http1",
      value: {
        routes: [
          httpRoute("a", [rule([pathPrefix("/api")]), rule([pathExact("/login")])]),
          httpRoute("d", [rule([])]),
        ],
      },
    },
  },
});
const smallMatch = () => {
  sink += small.find(reqs[k++ & 3])!.matcher.prefixLength;
};

// --- weighted split of 3 backends.
const split = compileOutboundPolicy({
  metadata: { kind: { $case: "default", value: "split" } },
  protocol: {
    kind: {
      $case: "http1",
      value: {
        routes: [httpRoute("s", [rule([], {
          backends: {
            kind: {
              $case: "randomAvailable",
              value: {
                backends: ["a", "b", "c"].map((n, i) => ({
                  backend: { backend: balancerBackend(n), filters: [] },
                  weight: 10 * (i + 1),
                })),
              },
            },
          },
        })])],
      },
    },
  },
}).find(request("GET", "/"))!.policy.backends;
const choose = () => {
  sink += split.choose(rng)!.key.length;
};

// --- inbound: 10 routes, identity authorization, per-connection cache.
const ID = "web.app.serviceaccount.identity.linkerd.cluster.local";
const inbound = compileHttpServer({
  protocol: {
    kind: {
      $case: "detect",
      value: {
        timeout: { seconds: 10n, nanos: 0 },
        httpRoutes: Array.from({ length: 10 }, (_, i) => ({
          metadata: { kind: { $case: "default" as const, value: `r${i}` } },
          hosts: [],
          authorizations: [{
            networks: [{ net: { ip: toIpAddress("0.0.0.0"), prefixLen: 0 }, except: [] }],
            authentication: {
              permit: {
                $case: "meshTLS" as const,
                value: {
                  clients: {
                    $case: "identities" as const,
                    value: { identities: [{ name: ID }], suffixes: [] },
                  },
                },
              },
            },
            labels: {},
            metadata: { kind: { $case: "default" as const, value: `a${i}` } },
          }],
          rules: [{ matches: [pathPrefix(`/svc${i}`)], filters: [] }],
        })),
      },
    },
  },
  serverIps: [],
  authorizations: [],
  labels: { name: "web" },
});
const az = new HttpAuthorizer({ clientIp: "10.1.2.3", tls: { clientId: ID } });
const inReqs = Array.from({ length: 10 }, (_, i) => request("GET", `/svc${i}/x`));
const authorizeReq = () => {
  const d = az.authorize(inbound, inReqs[k++ % 10], rng);
  sink += d.allow ? 1 : 0;
};

const results = {
  pick_ns_3_endpoints: measure(balancerCase(3)),
  pick_ns_100_endpoints: measure(balancerCase(100)),
  pick_ns_100_endpoints_shared_clock: measure(balancerSharedNow(100)),
  clock_read_ns: measure(() => {
    sink += performance.now();
  }),
  baseline_random_pick_ns: measure(naivePick(100)),
  route_match_ns_61_rules: measure(routeMatch),
  route_match_ns_3_rules: measure(smallMatch),
  baseline_map_lookup_ns: measure(mapLookup),
  backend_choose_ns: measure(choose),
  inbound_authorize_ns_10_routes: measure(authorizeReq),
};
const round = (x: number) => Math.round(x * 10) / 10;
const out = {
  ...Object.fromEntries(Object.entries(results).map(([key, v]) => [key, round(v)])),
  pick_vs_random_ratio: round(results.pick_ns_100_endpoints / results.baseline_random_pick_ns),
  pick_shared_clock_vs_random_ratio: round(
    results.pick_ns_100_endpoints_shared_clock / results.baseline_random_pick_ns,
  ),
  route_match_vs_map_ratio: round(results.route_match_ns_61_rules / results.baseline_map_lookup_ns),
};
for (const [key, v] of Object.entries(out)) console.log(`${key.padEnd(36)} ${v}`);
if (sink === -1) console.log("");
console.log(JSON.stringify(out));
