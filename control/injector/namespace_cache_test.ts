import assert from "node:assert/strict";
import { Registry } from "prom-client";
import { FakeEventSource, Informer } from "../k8s/mod.ts";
import { NamespaceCache, type NamespaceObject } from "./namespace_cache.ts";

Deno.test("a namespace missing from the cache waits for the watch, bounded by the wait time", async () => {
  const source = new FakeEventSource<NamespaceObject>();
  source.apply({ metadata: { name: "a" } });
  const informer = new Informer<NamespaceObject>({ name: "namespaces", source });
  const registry = new Registry();
  const cache = new NamespaceCache(informer, { waitMs: 150, registry });
  const ac = new AbortController();
  const done = informer.start(ac.signal);
  try {
    await informer.synced;
    assert.equal((await cache.lookup("a"))?.metadata.name, "a");
    const late = cache.lookup("b");
    source.apply({ metadata: { name: "b", annotations: { x: "y" } } });
    assert.deepEqual((await late)?.metadata.annotations, { x: "y" });
    const t0 = performance.now();
    assert.equal(await cache.lookup("never"), undefined);
    assert.ok(performance.now() - t0 >= 140, "an absent namespace is waited for");
    const m = await registry.metrics();
    assert.match(m, /proxy_inject_namespace_cache_misses_total\{outcome="arrived"\} 1/);
    assert.match(m, /proxy_inject_namespace_cache_misses_total\{outcome="absent"\} 1/);
  } finally {
    ac.abort();
    await done;
  }
});
