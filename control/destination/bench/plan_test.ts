import assert from "node:assert/strict";
import { placeStream, replicaOfConnection } from "./plan.ts";

Deno.test("placeStream: connections spread round-robin over the replicas, streams with their connections", () => {
  const procs = 2, channels = 8;
  for (const replicas of [1, 2, 3]) {
    // Every connection of every client process dials one replica; each replica gets its share.
    const conns = Array.from({ length: replicas }, () => 0);
    for (let p = 0; p < procs; p++) {
      for (let c = 0; c < channels; c++) conns[replicaOfConnection(p, c, channels, replicas)]++;
    }
    const want = (procs * channels) / replicas;
    for (const n of conns) assert.ok(Math.abs(n - want) < 1, `connections ${conns}`);
    // Streams follow their connection, as a proxy's streams do: a replica's share is its share of
    // the connections (within one stream per connection), uneven when they do not divide.
    const streams = Array.from({ length: replicas }, () => 0);
    for (let k = 0; k < 10_000; k++) streams[placeStream(k, procs, channels, replicas).replica]++;
    streams.forEach((n, r) => {
      const share = (10_000 * conns[r]) / (procs * channels);
      assert.ok(Math.abs(n - share) <= conns[r], `replica ${r}: ${n} streams, want ${share}`);
    });
  }
});

Deno.test("placeStream: a stream's replica is its connection's, in the order its process opens streams", () => {
  const procs = 3, channels = 4, replicas = 2;
  // Replay what a client process does: it takes k with k % procs == index, in order, and puts its
  // j-th stream on connection j % channels.
  for (let index = 0; index < procs; index++) {
    let j = 0;
    for (let k = 0; k < 500; k++) {
      if (k % procs !== index) continue;
      const p = placeStream(k, procs, channels, replicas);
      assert.equal(p.proc, index);
      assert.equal(p.channel, j % channels);
      assert.equal(p.replica, replicaOfConnection(index, j % channels, channels, replicas));
      j++;
    }
  }
});

Deno.test("placeStream: with one replica every stream is on it", () => {
  for (let k = 0; k < 100; k++) assert.equal(placeStream(k, 2, 4, 1).replica, 0);
});
