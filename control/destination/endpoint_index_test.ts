import assert from "node:assert/strict";
import { Update, WeightedAddr } from "../../proto/gen/destination.ts";
import { fromTcpAddress } from "../../proto/ip.ts";
import { type EventSource, FakeEventSource, type KubeObject, type ResourceRef } from "../k8s/mod.ts";
import { ClusterState } from "./cluster_state.ts";
import { defaultConfig, type DestinationConfig } from "./config.ts";
import { EndpointIndex, FANOUT_SLICE_MS, type Subscriber } from "./endpoint_index.ts";
import { computeEndpoints, type EndpointSet } from "./endpoints.ts";
import type { EndpointSlice, Service } from "./k8s_types.ts";
import { pod, service, slice } from "./testing.ts";

const REQ = { service: "web", namespace: "ns", port: 80 };
const settle = () => new Promise((r) => setTimeout(r, 0));
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function setup(overrides: Partial<DestinationConfig> = {}) {
  const fakes = new Map<string, FakeEventSource<KubeObject>>();
  const fake = (plural: string) => {
    let f = fakes.get(plural);
    if (!f) fakes.set(plural, f = new FakeEventSource(plural));
    return f;
  };
  const state = new ClusterState({
    sources: <T extends KubeObject>(ref: ResourceRef) => fake(ref.plural) as unknown as EventSource<T>,
    log: () => {},
  });
  const ctrl = new AbortController();
  const informers = state.start(ctrl.signal);
  await state.synced;
  const config = defaultConfig({
    controlPlaneNamespace: "linkerd",
    trustDomain: "cluster.local",
    ...overrides,
  });
  const index = new EndpointIndex(state, config, { signal: ctrl.signal });
  const apply = (plural: string, o: KubeObject) => fake(plural).apply(o);
  apply("namespaces", { metadata: { name: "ns" } });
  apply("services", service("ns", "web"));
  for (const n of ["a", "b", "c", "d"]) {
    apply("pods", pod("ns", n, `10.0.0.${n.charCodeAt(0) - 96}`, { meshed: true }));
  }
  await settle();
  return {
    state,
    config,
    index,
    apply,
    setIps: (names: string[]) =>
      apply(
        "endpointslices",
        slice("ns", "web", names.map((n) => ({ ip: `10.0.0.${n.charCodeAt(0) - 96}`, pod: n }))),
      ),
    stop: async () => {
      ctrl.abort();
      await informers;
    },
  };
}

/** A subscriber that keeps the raw frames and the endpoint set they add up to. */
function recorder() {
  const frames: Uint8Array[] = [];
  const ips = new Set<string>();
  const sub: Subscriber = {
    push(m) {
      frames.push(m);
      const u = Update.decode(m).update;
      if (u?.$case === "add") { for (const a of u.value.addrs) ips.add(fromTcpAddress(a.addr!)); }
      else if (u?.$case === "remove") { for (const a of u.value.addrs) ips.delete(fromTcpAddress(a)); }
      else ips.clear();
    },
  };
  return { sub, frames, ips, kinds: () => frames.map((f) => Update.decode(f).update?.$case) };
}

Deno.test("coalescing: a lone change goes out at once; changes within the window after it give one diff to the latest state", async () => {
  const t = await setup({ coalesceWindowMs: 40 });
  try {
    t.setIps(["a", "b"]);
    await settle();
    const r = recorder();
    t.index.subscribe(REQ, r.sub);
    assert.deepEqual([...r.ips].sort(), ["10.0.0.1:8080", "10.0.0.2:8080"]);
    let flushes = 0;
    t.index.onFlush = () => flushes++;

    // After a quiet window: at once (within this turn of the event loop).
    t.setIps(["a", "b", "c"]);
    await settle();
    assert.deepEqual(r.kinds(), ["add", "add"]);
    assert.equal(flushes, 1);

    // Within the window: d appears and disappears, a goes; held, then one remove(a) and nothing of d.
    t.setIps(["a", "b", "c", "d"]);
    await sleep(5);
    t.setIps(["a", "b", "c"]);
    t.setIps(["b", "c"]);
    await sleep(5);
    assert.equal(r.frames.length, 2, "held for the window");
    await sleep(80);
    assert.deepEqual(r.kinds(), ["add", "add", "remove"]);
    assert.deepEqual([...r.ips].sort(), ["10.0.0.2:8080", "10.0.0.3:8080"]);
    assert.equal(flushes, 2, "three events recomputed once");

    // The last state of a burst arrives even when it empties the set.
    t.setIps(["d"]);
    t.setIps([]);
    await sleep(80);
    assert.deepEqual([...r.ips], []);
  } finally {
    await t.stop();
  }
});

Deno.test("shared encoding: all streams of a view get the bytes a stream alone would get", async () => {
  const shared = await setup({ coalesceWindowMs: 0 });
  const alone = await setup({ coalesceWindowMs: 0 });
  try {
    for (const t of [shared, alone]) t.setIps(["a", "b"]);
    await settle();
    const many = Array.from({ length: 5 }, () => recorder());
    for (const r of many) shared.index.subscribe(REQ, r.sub);
    const one = recorder();
    alone.index.subscribe(REQ, one.sub);
    for (const t of [shared, alone]) t.setIps(["b", "c", "d"]);
    await settle();
    assert.deepEqual(one.kinds(), ["add", "remove", "add"]);
    for (const r of many) {
      assert.equal(r.frames.length, one.frames.length);
      r.frames.forEach((f, i) => {
        assert.equal(f, many[0].frames[i], "one encoding shared by the view's streams");
        assert.deepEqual(f, one.frames[i], "byte-identical to encoding for one stream");
      });
    }
    // The shared frame decodes as the Update the generated encoder builds for the same content.
    const last = Update.decode(one.frames[2]);
    assert.deepEqual(Update.decode(Update.encode(last).finish()), last);
  } finally {
    await shared.stop();
    await alone.stop();
  }
});

Deno.test("endpoint reuse: unchanged endpoints keep their object and bytes; pod, slice-field and generation changes rebuild", async () => {
  const t = await setup();
  try {
    t.setIps(["a", "b"]);
    await settle();
    const compute = (previous: EndpointSet | undefined, generation: number) =>
      computeEndpoints(
        t.state.services.get("ns", "web") as Service,
        t.state.endpointSlices.byIndex("service", "ns/web") as EndpointSlice[],
        80,
        undefined,
        t.state.lookups(),
        t.config,
        { previous, generation },
      );
    const first = compute(undefined, 0);
    const again = compute(first, 0);
    assert.equal(again.endpoints[0], first.endpoints[0]);
    assert.equal(again.endpoints[1], first.endpoints[1]);

    // A pod update (new service account): that endpoint only is rebuilt, with the new identity.
    t.apply("pods", pod("ns", "b", "10.0.0.2", { meshed: true, sa: "other" }));
    await settle();
    const podChanged = compute(again, 0);
    assert.equal(podChanged.endpoints[0], first.endpoints[0]);
    assert.notEqual(podChanged.endpoints[1], first.endpoints[1]);
    assert.equal(WeightedAddr.decode(podChanged.endpoints[1].base).metricLabels.serviceaccount, "other");
    const fresh = compute(undefined, 0);
    assert.deepEqual(podChanged.endpoints.map((e) => e.base), fresh.endpoints.map((e) => e.base));

    // A slice field the address reads (zone) rebuilds that endpoint.
    t.apply(
      "endpointslices",
      slice("ns", "web", [{ ip: "10.0.0.1", pod: "a", zone: "z1" }, { ip: "10.0.0.2", pod: "b" }]),
    );
    await settle();
    const zoned = compute(podChanged, 0);
    assert.notEqual(zoned.endpoints[0], podChanged.endpoints[0]);
    assert.equal(WeightedAddr.decode(zoned.endpoints[0].base).metricLabels.zone, "z1");
    assert.equal(zoned.endpoints[1], podChanged.endpoints[1]);

    // Another generation (a namespace, node, owner or Server changed): nothing is reused.
    const next = compute(zoned, 1);
    assert.ok(next.endpoints.every((e, i) => e !== zoned.endpoints[i]));
  } finally {
    await t.stop();
  }
});

Deno.test("fan-out: a large fan-out yields to the event loop between slices and keeps each stream's order", async () => {
  const t = await setup({ coalesceWindowMs: 0 });
  try {
    t.setIps(["a", "b"]);
    await settle();
    // Each write costs ~50 µs: 2,000 streams × 2 messages is several slices.
    const streams = Array.from({ length: 2000 }, () => {
      const r = recorder();
      const push = r.sub.push.bind(r.sub);
      r.sub.push = (m) => {
        const until = performance.now() + 0.05;
        while (performance.now() < until) { /* the cost of a write */ }
        push(m);
      };
      return r;
    });
    for (const r of streams) t.index.subscribe(REQ, r.sub);
    let ticked = -1;
    setTimeout(() => ticked = streams.filter((r) => r.frames.length === 3).length, 0);
    t.setIps(["c", "d"]);
    const until = Date.now() + 10_000;
    while (t.index.fanoutPending > 0 || ticked < 0) {
      if (Date.now() > until) throw new Error("fan-out did not finish");
      await sleep(FANOUT_SLICE_MS);
    }
    assert.ok(ticked >= 0 && ticked < streams.length, `a timer ran mid fan-out (${ticked} streams done)`);
    for (const r of streams) {
      assert.deepEqual(r.kinds(), ["add", "remove", "add"]);
      assert.deepEqual([...r.ips].sort(), ["10.0.0.3:8080", "10.0.0.4:8080"]);
    }
  } finally {
    await t.stop();
  }
});

Deno.test("a pod behind two services: its changes reach both topics, and the one left after the other is dropped", async () => {
  const t = await setup({ coalesceWindowMs: 0 });
  try {
    t.apply("services", service("ns", "api"));
    t.setIps(["a", "b"]);
    t.apply("endpointslices", slice("ns", "api", [{ ip: "10.0.0.1", pod: "a" }]));
    await settle();
    const web = recorder();
    const api = recorder();
    t.index.subscribe(REQ, web.sub);
    const dropApi = t.index.subscribe({ ...REQ, service: "api" }, api.sub);
    const sa = (r: ReturnType<typeof recorder>) => {
      const u = Update.decode(r.frames.at(-1)!).update;
      return u?.$case === "add" ? u.value.addrs.map((a) => a.metricLabels.serviceaccount) : [];
    };

    // Pod a backs both topics: a new service account goes to both.
    t.apply("pods", pod("ns", "a", "10.0.0.1", { meshed: true, sa: "first" }));
    await settle();
    assert.deepEqual(sa(web), ["first"]);
    assert.deepEqual(sa(api), ["first"]);

    // With api's topic gone, pod a still reaches web's.
    dropApi();
    const apiFrames = api.frames.length;
    t.apply("pods", pod("ns", "a", "10.0.0.1", { meshed: true, sa: "second" }));
    await settle();
    assert.deepEqual(sa(web), ["second"]);
    assert.equal(api.frames.length, apiFrames, "an unsubscribed stream gets nothing");

    // A pod that no longer backs any watched topic changes nothing.
    t.setIps(["b"]);
    await settle();
    const webFrames = web.frames.length;
    t.apply("pods", pod("ns", "a", "10.0.0.1", { meshed: true, sa: "third" }));
    await settle();
    assert.equal(web.frames.length, webFrames);
  } finally {
    await t.stop();
  }
});
