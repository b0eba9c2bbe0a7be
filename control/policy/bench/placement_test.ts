import assert from "node:assert/strict";
import { connectionsFor, placement, STREAMS_PER_CONNECTION } from "./placement.ts";
import { streams } from "./scenario.ts";

Deno.test("placement: connections numbered across processes, each dialling the next replica", () => {
  const p = placement([600, 600], 2);
  // 3 connections per process: 0,1,2 and 3,4,5 → replicas 0,1,0 and 1,0,1.
  assert.deepEqual(p.firstConnection, [0, 3]);
  assert.deepEqual(p.replicaOf[0].slice(0, 4), [0, 1, 0, 0]);
  assert.deepEqual(p.replicaOf[1].slice(0, 4), [1, 0, 1, 1]);
});

Deno.test("placement: streams spread over replicas as the connections do", () => {
  for (const replicas of [1, 2, 3]) {
    const counts = [5000, 5000];
    const p = placement(counts, replicas);
    const conns = Array.from({ length: replicas }, () => 0);
    for (let c = 0; c < 2 * connectionsFor(5000); c++) conns[c % replicas]++;
    const streams = Array.from({ length: replicas }, () => 0);
    for (const row of p.replicaOf) for (const r of row) streams[r]++;
    streams.forEach((n, r) => {
      // Each connection carries 250 streams here: a replica's share is its connections × 250.
      assert.equal(n, conns[r] * STREAMS_PER_CONNECTION, `replica ${r}: ${streams}`);
    });
  }
});

Deno.test("placement: one replica holds every stream", () => {
  const p = placement([7, 300], 1);
  assert.ok(p.replicaOf.flat().every((r) => r === 0));
});

Deno.test("placement: at the goal size no change's streams are pinned to one replica of two", () => {
  // Every change reaches a group of streams (one app's pods, or one Service's clients): a placement
  // that follows the stream order could put a whole group on one replica, unlike many proxies.
  const all = streams({ namespaces: 10, apps: 400, podsPerApp: 6, outPerSvc: 7 });
  const shares = [0, 1].map((k) => all.filter((_, i) => i % 2 === k));
  const p = placement(shares.map((s) => s.length), 2);
  const groups = new Map<number, Set<number>>();
  shares.forEach((share, k) =>
    share.forEach((s, j) => {
      if (s.group < 0) return;
      let g = groups.get(s.group);
      if (!g) groups.set(s.group, g = new Set());
      g.add(p.replicaOf[k][j]);
    })
  );
  assert.equal(groups.size, 800);
  assert.equal([...groups.values()].filter((g) => g.size < 2).length, 0);
});
