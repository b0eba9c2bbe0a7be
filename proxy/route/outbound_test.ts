import assert from "node:assert/strict";
import type { OutboundPolicy } from "../../proto/gen_messages/outbound.ts";
import { toIpAddress } from "../../proto/ip.ts";
import { FakeClock } from "../../proto/support/fake_clock.ts";
import { seededRng } from "../core/rng.ts";
import { msDuration } from "../core/duration.ts";
import { compileOutboundPolicy } from "./outbound.ts";
import { compileProfile } from "./profile.ts";
import { selectRouting } from "./select.ts";
import { balancerBackend, httpRoute, pathPrefix, request, rule } from "./testing.ts";

const split = rule([pathPrefix("/")], {
  backends: {
    kind: {
      $case: "randomAvailable",
      value: {
        backends: [
          { backend: { backend: balancerBackend("web-v1"), filters: [] }, weight: 800 },
          { backend: { backend: balancerBackend("web-v2"), filters: [] }, weight: 200 },
        ],
      },
    },
  },
  timeouts: { request: msDuration(2_000), response: msDuration(500), idle: undefined },
  retry: {
    maxRetries: 2,
    maxRequestBytes: 0,
    conditions: { statusRanges: [{ start: 502, end: 504 }] },
    timeout: msDuration(100),
    backoff: undefined,
  },
});

const policy: OutboundPolicy = {
  metadata: {
    kind: {
      $case: "resource",
      value: { group: "core", kind: "Service", name: "web", namespace: "ns", section: "", port: 80 },
    },
  },
  protocol: {
    kind: {
      $case: "detect",
      value: {
        timeout: msDuration(10_000),
        opaque: { routes: [] },
        http1: {
          routes: [httpRoute("split", [split])],
          failureAccrual: {
            kind: { $case: "consecutiveFailures", value: { maxFailures: 7, backoff: undefined } },
            ejection: { minReadyEndpoints: 2 },
          },
        },
        http2: { routes: [httpRoute("h2", [rule([])])], failureAccrual: undefined },
      },
    },
  },
};

Deno.test("outbound policy: detect picks the table by HTTP version; backends, split, plan, accrual", () => {
  const p = compileOutboundPolicy(policy);
  assert.equal(p.protocol, "detect");
  assert.equal(p.detectTimeoutMs, 10_000);
  const h1 = p.find(request("GET", "/x"))!;
  assert.equal(h1.policy.route.name, "split");
  const h2 = p.find({ ...request("GET", "/x"), version: "HTTP/2" })!;
  assert.equal(h2.policy.route.name, "h2");

  assert.deepEqual(p.routesFor("HTTP/1.1")!.failureAccrual, {
    maxFailures: 7,
    backoff: { minMs: 1_000, maxMs: 60_000, jitter: 0.5 },
    minReady: 2,
  });
  assert.equal(p.routesFor("HTTP/2")!.failureAccrual, undefined);

  assert.deepEqual([...p.backends.values()].map((b) => b.meta.name).sort(), ["web", "web-v1", "web-v2"]);
  const v1 = h1.policy.backends.backends[0];
  assert.equal(v1.target.kind, "balancer");
  assert.deepEqual(v1.target.kind === "balancer" && v1.target.ewma, { defaultRttMs: 30, decayMs: 10_000 });
  assert.deepEqual(v1.queue, { capacity: 100, failfastMs: 3_000 });

  const rng = seededRng(5);
  let v2 = 0;
  for (let i = 0; i < 10_000; i++) if (h1.policy.backends.choose(rng)!.meta.name === "web-v2") v2++;
  assert.ok(Math.abs(v2 - 2_000) < 150, `web-v2 got ${v2} of 10000, want ~2000`);

  const plan = h1.policy.plan;
  assert.deepEqual(plan.timeouts, { requestMs: 2_000, responseMs: 500 });
  assert.equal(plan.retry!.maxRetries, 2);
  assert.equal(plan.retry!.maxRequestBytes, 64 * 1024, "0 means Linkerd's default 64 KiB");
  assert.equal(plan.retry!.perTryTimeoutMs, 100);
  assert.deepEqual(plan.retry!.conditions, { kind: "http", ranges: [[502, 504]] });
  assert.equal(h2.policy.plan.retry, undefined);
});

Deno.test("outbound policy: the same backend is one key across rules; forward backends; invalid ones", () => {
  const fwd = {
    metadata: { kind: { $case: "default" as const, value: "fwd" } },
    kind: {
      $case: "forward" as const,
      value: { addr: { ip: toIpAddress("10.1.2.3"), port: 8080 }, weight: 1, metricLabels: {} },
    },
    queue: { capacity: 10, failfastTimeout: msDuration(1_000) },
  };
  const p = compileOutboundPolicy({
    metadata: { kind: { $case: "default", value: "x" } },
    protocol: {
      kind: {
        $case: "http1",
        value: {
          routes: [
            httpRoute("a", [rule([pathPrefix("/a")]), rule([pathPrefix("/b")])]),
            httpRoute("f", [
              rule([pathPrefix("/f")], {
                backends: {
                  kind: { $case: "firstAvailable", value: { backends: [{ backend: fwd, filters: [] }] } },
                },
              }),
              rule([pathPrefix("/none")], {
                backends: {
                  kind: {
                    $case: "firstAvailable",
                    value: { backends: [{ backend: { ...fwd, kind: undefined }, filters: [] }] },
                  },
                },
              }),
            ]),
          ],
          failureAccrual: undefined,
        },
      },
    },
  });
  assert.equal(p.backends.size, 3);
  const a = p.find(request("GET", "/a"))!.policy.backends.backends[0];
  const b = p.find(request("GET", "/b"))!.policy.backends.backends[0];
  assert.equal(a.key, b.key);
  const f = p.find(request("GET", "/f"))!.policy.backends.backends[0];
  assert.deepEqual(f.target.kind === "forward" && [f.target.ip, f.target.port], ["10.1.2.3", 8080]);
  const none = p.find(request("GET", "/none"))!.policy.backends.backends[0];
  assert.equal(none.target.kind, "invalid", "a backend without a target fails its requests, not the policy");
});

Deno.test("routing precedence: a ServiceProfile with routes or overrides wins over the policy", () => {
  const clock = new FakeClock();
  const p = compileOutboundPolicy(policy);
  const empty = compileProfile({
    routes: [],
    dstOverrides: [],
    opaqueProtocol: false,
    fullyQualifiedName: "web.ns.svc.cluster.local",
  }, clock);
  const withRoutes = compileProfile({
    routes: [{
      condition: { match: { $case: "path", value: { regex: "/.*" } } },
      responseClasses: [],
      metricsLabels: { route: "all" },
      isRetryable: false,
    }],
    dstOverrides: [],
    opaqueProtocol: false,
    fullyQualifiedName: "web.ns.svc.cluster.local",
  }, clock);
  assert.equal(selectRouting(empty, p).kind, "policy");
  assert.equal(selectRouting(withRoutes, p).kind, "profile");
  assert.equal(selectRouting(empty, undefined).kind, "profile");
  assert.equal(selectRouting(undefined, p).kind, "policy");
  assert.equal(selectRouting(undefined, undefined).kind, "default");
});
