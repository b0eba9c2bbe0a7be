import assert from "node:assert/strict";
import { Registry } from "prom-client";
import { FakeEventSource } from "./fake_source.ts";
import { Informer } from "./informer.ts";
import type { KubeObject } from "./types.ts";

type Thing = KubeObject & { spec?: { color?: string } };

function thing(name: string, color = "red", ns = "default", extra: Partial<Thing["metadata"]> = {}): Thing {
  return { metadata: { name, namespace: ns, ...extra }, spec: { color } };
}

async function waitFor(what: string, cond: () => boolean, timeoutMs = 3000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!cond()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

interface Recorded {
  events: string[];
  informer: Informer<Thing>;
  fake: FakeEventSource<Thing>;
  ctrl: AbortController;
  done: Promise<void>;
  registry: Registry;
}

function setup(fake = new FakeEventSource<Thing>("things"), now?: () => number): Recorded {
  const registry = new Registry();
  const informer = new Informer<Thing>({
    name: "things",
    source: fake,
    indexers: { color: (t) => t.spec?.color ? [t.spec.color] : [] },
    registry,
    pageSize: 2,
    backoff: { initialMs: 5, maxMs: 20 },
    now,
    log: Deno.env.get("DEBUG") ? console.log : () => {},
  });
  const events: string[] = [];
  informer.onAdd((t) => events.push(`add ${t.metadata.name}`));
  informer.onUpdate((o, t) => events.push(`update ${o.metadata.name} ${o.spec?.color}->${t.spec?.color}`));
  informer.onDelete((t) => events.push(`delete ${t.metadata.name}`));
  const ctrl = new AbortController();
  const done = informer.start(ctrl.signal);
  return { events, informer, fake, ctrl, done, registry };
}

Deno.test("initial list is paged, reported as adds, then synced; cache, get and index work", async () => {
  const fake = new FakeEventSource<Thing>("things");
  for (const [n, c] of [["a", "red"], ["b", "blue"], ["c", "red"], ["d", "green"], ["e", "red"]]) {
    fake.apply(thing(n, c));
  }
  const r = setup(fake);
  assert.equal(r.informer.isSynced(), false);
  await r.informer.synced;
  assert.equal(r.informer.isSynced(), true);
  assert.equal(fake.listCalls, 3, "5 objects in pages of 2");
  assert.deepEqual(r.events.sort(), ["add a", "add b", "add c", "add d", "add e"]);
  assert.equal(r.informer.size, 5);
  assert.equal(r.informer.get("default", "b")?.spec?.color, "blue");
  assert.equal(r.informer.getByKey("default/d")?.spec?.color, "green");
  assert.deepEqual(r.informer.byIndex("color", "red").map((t) => t.metadata.name).sort(), ["a", "c", "e"]);
  assert.deepEqual(r.informer.byIndex("color", "purple"), []);
  assert.throws(() => r.informer.byIndex("size", "x"), /no index "size"/);
  r.ctrl.abort();
  await r.done;
});

Deno.test("watch events update cache, indexes and handlers; unchanged versions are not reported", async () => {
  const r = setup();
  await r.informer.synced;
  await r.fake.watching();
  r.fake.apply(thing("a", "red"));
  r.fake.apply(thing("a", "blue"));
  r.fake.apply(thing("b", "blue"));
  r.fake.delete("default", "a");
  assert.deepEqual(r.events, ["add a", "update a red->blue", "add b", "delete a"]);
  assert.deepEqual(r.informer.byIndex("color", "red"), []);
  assert.deepEqual(r.informer.byIndex("color", "blue").map((t) => t.metadata.name), ["b"]);
  assert.equal(r.informer.get("default", "a"), undefined);
  assert.equal(r.informer.resourceVersion, r.fake.resourceVersion);
  r.ctrl.abort();
  await r.done;
});

Deno.test("a watch that ends resumes from the last version without listing again", async () => {
  const r = setup();
  await r.informer.synced;
  await r.fake.watching();
  r.fake.apply(thing("a"));
  const rv = r.fake.resourceVersion;
  r.fake.endWatches();
  await waitFor("second watch", () => r.fake.watchCalls === 2 && r.fake.openWatches === 1);
  assert.equal(r.fake.watchVersions[1], rv);
  assert.equal(r.fake.listCalls, 1);
  r.fake.apply(thing("b"));
  assert.deepEqual(r.events, ["add a", "add b"]);
  r.ctrl.abort();
  await r.done;
});

Deno.test("bookmarks move the resume version forward", async () => {
  const r = setup();
  await r.informer.synced;
  await r.fake.watching();
  r.fake.apply(thing("a"));
  // Changes to other resources move the version without events for this watch.
  r.fake.advance(5);
  r.fake.bookmark();
  assert.deepEqual(r.events, ["add a"], "a bookmark is not an event");
  const rv = r.fake.resourceVersion;
  r.fake.failWatches("connection reset by peer");
  await waitFor("resumed watch", () => r.fake.watchCalls === 2 && r.fake.openWatches === 1);
  assert.equal(r.fake.watchVersions[1], rv);
  assert.equal(r.fake.listCalls, 1, "a failed watch resumes, it does not re-list");
  r.ctrl.abort();
  await r.done;
});

Deno.test("410 Gone leads to a re-list diffed against the cache", async () => {
  const fake = new FakeEventSource<Thing>("things");
  fake.apply(thing("keep", "red"));
  fake.apply(thing("change", "red"));
  fake.apply(thing("gone", "red"));
  const r = setup(fake);
  await r.informer.synced;
  await fake.watching();
  r.events.length = 0;
  const listsBefore = fake.listCalls;
  // The watch breaks; while it is down the object history is compacted away.
  fake.failWatches();
  fake.apply(thing("change", "blue"));
  fake.delete("default", "gone");
  fake.apply(thing("new", "green"));
  fake.compact();
  await waitFor("re-list and watch", () => fake.listCalls > listsBefore && fake.openWatches === 1);
  assert.deepEqual(r.events.sort(), ["add new", "delete gone", "update change red->blue"]);
  assert.deepEqual(r.informer.list().map((t) => t.metadata.name).sort(), ["change", "keep", "new"]);
  assert.deepEqual(r.informer.byIndex("color", "red").map((t) => t.metadata.name), ["keep"]);
  const metrics = await r.registry.getSingleMetricAsString("things_informer_lists_total");
  assert.match(metrics, /reason="expired"} 1/);
  r.ctrl.abort();
  await r.done;
});

Deno.test("a failing list is retried and a throwing handler does not stop the informer", async () => {
  const fake = new FakeEventSource<Thing>("things");
  fake.apply(thing("a"));
  fake.failNextLists(new Error("connection refused"), new Error("connection refused"));
  const r = setup(fake);
  r.informer.onAdd((t) => {
    if (t.metadata.name === "a") throw new Error("handler bug");
  });
  await r.informer.synced;
  assert.equal(fake.listCalls, 3);
  await fake.watching();
  fake.apply(thing("b"));
  assert.deepEqual(r.events, ["add a", "add b"]);
  assert.match(await r.registry.getSingleMetricAsString("things_informer_handler_errors_total"), / 1$/m);
  assert.match(await r.registry.getSingleMetricAsString("things_informer_watch_errors_total"), / 2$/m);
  r.ctrl.abort();
  await r.done;
});

Deno.test("lag is measured on add, update and delete from the objects' timestamps, not on the initial list", async () => {
  let now = Date.parse("2026-01-01T00:00:10Z");
  const fake = new FakeEventSource<Thing>("things", () => now);
  fake.apply(thing("old", "red", "default", { creationTimestamp: "2025-12-31T00:00:00Z" }));
  const r = setup(fake, () => now);
  await r.informer.synced;
  await fake.watching();
  const lagSum = async (event: string) => {
    const m = (await r.registry.getMetricsAsJSON()).find((x) => x.name === "things_informer_lag_seconds")!;
    const v =
      (m as unknown as { values: { labels: Record<string, string>; value: number; metricName: string }[] })
        .values.filter((x) => x.labels.event === event);
    return {
      sum: v.find((x) => x.metricName.endsWith("_sum"))?.value ?? 0,
      count: v.find((x) => x.metricName.endsWith("_count"))?.value ?? 0,
    };
  };
  assert.deepEqual(await lagSum("add"), { sum: 0, count: 0 }, "initial list is not lag");
  fake.apply(thing("a", "red", "default", { creationTimestamp: "2026-01-01T00:00:07Z" }));
  assert.deepEqual(await lagSum("add"), { sum: 3, count: 1 });
  now += 5000;
  fake.apply(thing("a", "blue", "default", {
    managedFields: [{ manager: "m", operation: "Apply", time: "2026-01-01T00:00:13Z" }],
  }));
  assert.deepEqual(await lagSum("update"), { sum: 2, count: 1 });
  // Same managedFields time again: no change time known, nothing recorded.
  fake.apply(thing("a", "green", "default", {
    managedFields: [{ manager: "m", operation: "Apply", time: "2026-01-01T00:00:13Z" }],
  }));
  assert.deepEqual(await lagSum("update"), { sum: 2, count: 1 });
  fake.apply(thing("a", "green", "default", { deletionTimestamp: "2026-01-01T00:00:14Z" }));
  fake.delete("default", "a");
  assert.deepEqual(await lagSum("delete"), { sum: 1, count: 1 });
  assert.match(await r.registry.getSingleMetricAsString("things_informer_cache_size"), / 1$/m);
  r.ctrl.abort();
  await r.done;
});

Deno.test("abort stops the informer and closes its watch", async () => {
  const r = setup();
  await r.informer.synced;
  await r.fake.watching();
  r.ctrl.abort();
  await r.done;
  assert.equal(r.fake.openWatches, 0);
  r.fake.apply(thing("late"));
  assert.deepEqual(r.events, []);
});
