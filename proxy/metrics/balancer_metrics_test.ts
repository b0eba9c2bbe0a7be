import assert from "node:assert/strict";
import { Registry } from "./registry.ts";
import { BalancerMetrics } from "./balancer_metrics.ts";
import { Balancer } from "../balance/balancer.ts";
import { metric } from "../testing/poll.ts";

const PARENT = { group: "core", kind: "Service", namespace: "ns", name: "web", port: 80 };
const BACKEND = { group: "core", kind: "Service", namespace: "ns", name: "web", port: 80 };

Deno.test("balancer metrics: ready and pending endpoints per parent and backend, read at scrape", async () => {
  const registry = new Registry();
  const m = new BalancerMetrics(registry);
  const b = new Balancer<string>({ name: "web" });
  const remove = m.add(PARENT, BACKEND, b);
  const labels = { parent_name: "web", parent_port: "80", backend_name: "web", backend_port: "80" };
  const gauge = async (state: string) =>
    metric(await registry.metrics(), "outbound_http_balancer_endpoints", {
      ...labels,
      endpoint_state: state,
    });
  assert.equal(await gauge("ready"), 0);
  b.update(new Map([["a", "a"], ["b", "b"], ["c", "c"]]));
  assert.equal(await gauge("ready"), 3);
  assert.equal(await gauge("pending"), 0);
  b.update(new Map([["a", "a"]]));
  assert.equal(await gauge("ready"), 1, "removed endpoints leave the gauge");
  // An endpoint known but out of rotation counts as pending.
  const fake = { size: 4, readyCount: 1 };
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
    "closed balancers are gone",
  );
});
