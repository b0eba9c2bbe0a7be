import assert from "node:assert/strict";
import type { TapLine } from "./event_json.ts";
import { parseTapRequest } from "./request.ts";
import { tapSession } from "./session.ts";
import { fakeObserve, requestEvents } from "./testing.ts";

const targets = [{ namespace: "a", name: "p1", ip: "10.0.0.2" }, {
  namespace: "a",
  name: "p2",
  ip: "10.0.0.3",
}];

async function collect(it: AsyncIterable<TapLine>): Promise<TapLine[]> {
  const out: TapLine[] = [];
  for await (const l of it) out.push(l);
  return out;
}

Deno.test("events of every pod merged as JSON; ends at --limit after the limit's last request ended, streams cancelled", async () => {
  const observe = fakeObserve({
    p1: [...requestEvents({ stream: 1 }), ...requestEvents({ stream: 2, status: 503 })],
    p2: [...requestEvents({ stream: 1, grpcStatus: 14 }), ...requestEvents({ stream: 2 })],
  });
  const lines = await collect(tapSession({
    request: parseTapRequest({ namespace: "a", resource: "deploy/web", limit: 3 }),
    targets,
    observe,
    signal: new AbortController().signal,
  }));
  const events = lines.flatMap((l) => "event" in l ? [l.event] : []);
  const requests = events.filter((e) => e.http.kind === "request");
  assert.equal(requests.length, 3);
  // Every admitted request is complete (req, rsp, end), and nothing of a fourth is shown.
  for (const r of requests) {
    const of = events.filter((e) => e.pod === r.pod && e.http.id === r.http.id).map((e) => e.http.kind);
    assert.deepEqual(of, ["request", "response", "end"], `${r.pod} ${r.http.id}`);
  }
  assert.deepEqual(lines.at(-1), { end: { reason: "limit", requests: 3, dropped: 0 } });
  assert.deepEqual([...observe.asked.keys()].sort(), ["p1", "p2"]);
  assert.deepEqual([...observe.aborted].sort(), ["p1", "p2"], "the streams still open were cancelled");
  assert.equal((observe.asked.get("p1") as { limit: number }).limit, 3);
  const e503 = events.find((e) => e.http.kind === "response" && e.http.status === 503);
  assert.ok(e503 === undefined || e503.pod === "a/p1");
  const end = events.find((e) => e.pod === "a/p2" && e.http.id === "7:1" && e.http.kind === "end");
  if (end?.http.kind === "end") assert.equal(end.http.grpcStatus, 14);
});

Deno.test("a pod that fails is reported and the others go on; all streams ended ends the tap", async () => {
  const observe = fakeObserve({ p2: requestEvents({ stream: 1 }) }, {
    end: true,
    fail: { p1: "tap PERMISSION_DENIED: no" },
  });
  const lines = await collect(tapSession({
    request: parseTapRequest({ resource: "ns" }),
    targets,
    observe,
    signal: new AbortController().signal,
  }));
  assert.deepEqual(lines[0], { error: { pod: "a/p1", message: "tap PERMISSION_DENIED: no" } });
  // Without --limit each proxy is asked for the most it serves one tap (a larger limit is refused).
  assert.equal((observe.asked.get("p2") as { limit: number }).limit, 100_000);
  assert.equal(lines.filter((l) => "event" in l).length, 3);
  assert.deepEqual(lines.at(-1), { end: { reason: "pods-ended", requests: 1, dropped: 0 } });
});

Deno.test("the reader leaving cancels every pod's stream", async () => {
  const observe = fakeObserve({ p1: requestEvents({ stream: 1 }) });
  const reader = new AbortController();
  const it = tapSession({
    request: parseTapRequest({ resource: "ns" }),
    targets,
    observe,
    signal: reader.signal,
  });
  const first = await it.next();
  assert.ok(!first.done && "event" in first.value);
  reader.abort();
  for await (const _ of it) { /* drain */ }
  assert.deepEqual([...observe.aborted].sort(), ["p1", "p2"]);
});

Deno.test("max RPS admits at most that many requests per second; a full queue drops instead of waiting", async () => {
  const many = Array.from({ length: 20 }, (_, i) => requestEvents({ stream: i })).flat();
  let t = 0;
  const lines = await collect(tapSession({
    request: parseTapRequest({ resource: "ns", maxRps: 5 }),
    targets: [targets[0]],
    observe: fakeObserve({ p1: many }, { end: true }),
    signal: new AbortController().signal,
    now: () => t, // the clock does not move: only the first bucket's 5 tokens
  }));
  assert.equal(lines.filter((l) => "event" in l && l.event.http.kind === "request").length, 5);
  // Below one per second: one request, then the next only after the bucket refilled.
  const slowRate = await collect(tapSession({
    request: parseTapRequest({ resource: "ns", maxRps: 0.5 }),
    targets: [targets[0]],
    observe: fakeObserve({ p1: many }, { end: true }),
    signal: new AbortController().signal,
    now: () => t,
  }));
  assert.equal(slowRate.filter((l) => "event" in l && l.event.http.kind === "request").length, 1);
  t = 0;
  // A reader that does not read: a 4-line queue keeps the first request's lines and drops what does not fit.
  const slow = tapSession({
    request: parseTapRequest({ resource: "ns" }),
    targets: [targets[0]],
    observe: fakeObserve({ p1: many }, { end: true }),
    signal: new AbortController().signal,
    queueCapacity: 4,
  });
  const first = await slow.next();
  await new Promise((r) => setTimeout(r, 800)); // the pod has sent everything by then
  const rest = await collect({ [Symbol.asyncIterator]: () => slow });
  const all = [first.value as TapLine, ...rest];
  const end = all.at(-1) as { end: { dropped: number; requests: number } };
  assert.ok(end.end.dropped > 0, JSON.stringify(end));
  assert.ok(all.length <= 4 + 2, `${all.length} lines`);
});

Deno.test("a proxy that ends the tap at once with nothing is asked once more, then reported", async () => {
  // p1's first stream is empty and closed; its second carries a request. p2 is empty both times.
  let p1Calls = 0;
  const inner = fakeObserve({ p1: requestEvents({ stream: 1 }) }, { end: true });
  const observe = (async function* (t: { name: string }, req: unknown, signal: AbortSignal) {
    if (t.name === "p1" && p1Calls++ === 0) return;
    yield* inner(t as never, req as never, signal);
  }) as unknown as typeof inner;
  const lines = await collect(tapSession({
    request: parseTapRequest({ resource: "ns" }),
    targets,
    observe,
    signal: new AbortController().signal,
    emptyRetryMs: 5,
  }));
  assert.equal(p1Calls, 2);
  assert.equal(lines.filter((l) => "event" in l).length, 3, "p1's second stream was read");
  assert.deepEqual(lines.filter((l) => "error" in l), [
    { error: { pod: "a/p2", message: "the proxy ended the tap twice without an event or a status" } },
  ]);
  assert.deepEqual(lines.at(-1), { end: { reason: "pods-ended", requests: 1, dropped: 0 } });
});
