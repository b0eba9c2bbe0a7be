import assert from "node:assert/strict";
import { Registry } from "prom-client";
import { EventRecorder, type InjectionEvent } from "./events.ts";

const event = (name: string): InjectionEvent => ({
  namespace: "shop",
  involved: { apiVersion: "apps/v1", kind: "ReplicaSet", name, uid: "u" },
  reason: "InjectionWarning",
  message: "m",
});

Deno.test("events are sent one at a time in order; a full queue drops and counts instead of blocking", async () => {
  const registry = new Registry();
  const sent: Record<string, unknown>[] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => release = r);
  const rec = new EventRecorder(async (_ns, body) => {
    await gate;
    sent.push(body);
  }, { maxQueued: 2, registry, now: () => new Date("2026-01-01T00:00:00Z") });
  for (const n of ["a", "b", "c", "d"]) rec.record(event(n)); // "a" in flight, b and c queued, d dropped
  release();
  await rec.idle();
  assert.deepEqual(sent.map((b) => (b.involvedObject as { name: string }).name), ["a", "b", "c"]);
  assert.deepEqual(sent[0], {
    apiVersion: "v1",
    kind: "Event",
    metadata: { generateName: "a.", namespace: "shop" },
    involvedObject: { apiVersion: "apps/v1", kind: "ReplicaSet", name: "a", uid: "u", namespace: "shop" },
    reason: "InjectionWarning",
    message: "m",
    type: "Warning",
    source: { component: "weft-proxy-injector" },
    reportingComponent: "weft.io/proxy-injector",
    reportingInstance: "weft-proxy-injector",
    firstTimestamp: "2026-01-01T00:00:00.000Z",
    lastTimestamp: "2026-01-01T00:00:00.000Z",
    count: 1,
  });
  const m = await registry.metrics();
  assert.match(m, /proxy_inject_events_total\{outcome="sent"\} 3/);
  assert.match(m, /proxy_inject_events_total\{outcome="dropped"\} 1/);
});

Deno.test("a failed event is logged and counted, and the next one is still sent", async () => {
  const logs: string[] = [];
  let calls = 0;
  const rec = new EventRecorder(
    () => ++calls === 1 ? Promise.reject(new Error("forbidden")) : Promise.resolve(),
    {
      log: (m) => logs.push(m),
    },
  );
  rec.record(event("a"));
  rec.record(event("b"));
  await rec.idle();
  assert.equal(calls, 2);
  assert.deepEqual(logs, ["cannot record event InjectionWarning on ReplicaSet shop/a: forbidden"]);
});
