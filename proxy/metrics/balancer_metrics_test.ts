import assert from "node:assert/strict";
import { FakeClock } from "../../proto/support/fake_clock.ts";
import { Registry } from "./registry.ts";
import { BalancerMetrics, profileServiceRef } from "./balancer_metrics.ts";
import { Balancer } from "../balance/balancer.ts";
import { metric } from "../testing/poll.ts";

const PARENT = { group: "core", kind: "Service", namespace: "ns", name: "web", port: 80 };
const BACKEND = { group: "core", kind: "Service", namespace: "ns", name: "web", port: 80 };
const LABELS = { parent_name: "web", parent_port: "80", backend_name: "web", backend_port: "80" };

Deno.test("balancer metrics: ready and pending endpoints per parent and backend, read at scrape", async () => {
  const registry = new Registry();
  const m = new BalancerMetrics(registry);
  const b = new Balancer<string>({ name: "web", stats: m.stats(PARENT, BACKEND) });
  const remove = m.add(PARENT, BACKEND, b);
  const gauge = async (state: string) =>
    metric(await registry.metrics(), "outbound_http_balancer_endpoints", {
      ...LABELS,
      endpoint_state: state,
    });
  assert.equal(await gauge("ready"), 0);
  b.update(new Map([["a", "a"], ["b", "b"], ["c", "c"]]));
  assert.equal(await gauge("ready"), 3);
  assert.equal(await gauge("pending"), 0);
  b.update(new Map([["a", "a"]]));
  assert.equal(await gauge("ready"), 1, "removed endpoints leave the gauge");
  // An endpoint known but out of rotation counts as pending.
  const fake = { size: 4, readyCount: 1, waiting: 0 };
  const removeFake = m.add(PARENT, { ...BACKEND, name: "other" }, fake);
  const text = await registry.metrics();
  assert.equal(
    metric(text, "outbound_http_balancer_endpoints", { backend_name: "other", endpoint_state: "pending" }),
    3,
  );
  assert.match(text, /# TYPE outbound_http_balancer_endpoints gauge/);
  remove();
  removeFake();
  b.close();
  assert.equal(
    metric(await registry.metrics(), "outbound_http_balancer_endpoints", {}),
    0,
    "closed balancers count nothing",
  );
});

Deno.test("balancer metrics: Linkerd's queue, gate and p2c families from the balancers' own counts", async () => {
  const registry = new Registry();
  const m = new BalancerMetrics(registry);
  const clock = new FakeClock();
  const b = new Balancer<string>({
    clock,
    queue: { capacity: 10, failfastMs: 2_000 },
    stats: m.stats(PARENT, BACKEND),
  });
  m.add(PARENT, BACKEND, b);
  const scrape = () => registry.metrics();
  const get = (text: string, name: string, extra: Record<string, string> = {}) =>
    metric(text, `outbound_http_balancer_${name}`, { ...LABELS, ...extra });

  // Two requests wait 10 ms for the endpoints, then three are served at once.
  const waiting = [b.acquire(), b.acquire()];
  let text = await scrape();
  assert.equal(get(text, "queue_length"), 2);
  assert.equal(get(text, "queue_requests_total"), 2);
  clock.advance(10);
  b.update(new Map([["a", "a"], ["b", "b"]]));
  for (const l of await Promise.all(waiting)) l.done(true);
  for (let i = 0; i < 3; i++) b.pick()!.done(true);
  text = await scrape();
  assert.equal(get(text, "queue_length"), 0);
  assert.equal(get(text, "queue_requests_total"), 5);
  assert.equal(get(text, "p2c_endpoints"), 2);
  assert.equal(get(text, "p2c_updates_total", { op: "Add" }), 2);
  assert.equal(get(text, "p2c_updates_total", { op: "Remove" }), 0);
  assert.equal(get(text, "p2c_updates_total", { op: "Reset" }), 0);
  assert.equal(get(text, "queue_latency_seconds_bucket", { le: "0.0005" }), 3, "three served at once");
  assert.equal(get(text, "queue_latency_seconds_bucket", { le: "0.005" }), 3);
  assert.equal(get(text, "queue_latency_seconds_bucket", { le: "0.05" }), 5, "two waited 10 ms");
  assert.equal(get(text, "queue_latency_seconds_bucket", { le: "+Inf" }), 5);
  assert.equal(get(text, "queue_latency_seconds_count"), 5);
  assert.ok(Math.abs(get(text, "queue_latency_seconds_sum") - 0.02) < 1e-9);
  assert.match(text, /# TYPE outbound_http_balancer_queue_latency_seconds histogram/);
  assert.match(text, /# TYPE outbound_http_balancer_queue_requests_total counter/);
  assert.equal(get(text, "queue_gate_open_total"), 1);
  assert.equal(get(text, "queue_gate_shut_total"), 0);
  assert.equal(get(text, "queue_gate_timeout_seconds"), 2);
  assert.ok(Math.abs(get(text, "queue_gate_open_time_seconds") - Date.now() / 1000) < 60);
  assert.equal(get(text, "queue_gate_shut_time_seconds"), 0);
  // The op label comes first, then parent and backend, as linkerd2-proxy writes it.
  assert.match(text, /outbound_http_balancer_p2c_updates_total\{op="Add",parent_group="core",/);

  // Every endpoint gone: a waiter meets failfast after 2 s and the gate shuts; one endpoint opens it again.
  b.update(new Map());
  const failed = b.acquire();
  clock.advance(2_000);
  await assert.rejects(failed);
  text = await scrape();
  assert.equal(get(text, "p2c_updates_total", { op: "Remove" }), 2);
  assert.equal(get(text, "queue_gate_shut_total"), 1);
  assert.equal(get(text, "queue_gate_open_time_seconds"), 0);
  assert.ok(get(text, "queue_gate_shut_time_seconds") > 0);
  assert.equal(get(text, "queue_latency_seconds_bucket", { le: "1" }), 5);
  assert.equal(get(text, "queue_latency_seconds_bucket", { le: "3" }), 6, "the failed waiter, 2 s");
  b.update(new Map([["a", "a"]]));
  text = await scrape();
  assert.equal(get(text, "queue_gate_open_total"), 2);
  assert.equal(get(text, "queue_gate_shut_time_seconds"), 0);
  b.close();
});

Deno.test("balancer metrics: ServiceProfile parents and backends are Services named by their authority", () => {
  assert.deepEqual(profileServiceRef("web.ns.svc.cluster.local:8080"), {
    group: "core",
    kind: "Service",
    namespace: "ns",
    name: "web",
    port: 8080,
    section: "",
  });
  const unknown = { group: "", kind: "default", namespace: "", name: "unknown", section: "" };
  assert.deepEqual(profileServiceRef("example.com:443"), unknown);
  assert.deepEqual(profileServiceRef("web.ns.svc.cluster.local"), unknown, "no port");
  assert.deepEqual(profileServiceRef("10.0.0.1:80"), unknown);
});
