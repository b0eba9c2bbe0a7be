import assert from "node:assert/strict";
import { placeStream, replicaOfConnection, serviceOf } from "./plan.ts";

Deno.test("replicaOfConnection: connections spread round-robin over the replicas", () => {
  const procs = 2, channels = 8;
  for (const replicas of [1, 2, 3]) {
    const conns = Array.from({ length: replicas }, () => 0);
    for (let p = 0; p < procs; p++) {
      for (let c = 0; c < channels; c++) conns[replicaOfConnection(p, c, channels, replicas)]++;
    }
    const want = (procs * channels) / replicas;
    for (const n of conns) assert.ok(Math.abs(n - want) < 1, `connections ${conns}`);
  }
});

Deno.test("placeStream: a stream is on its connection's replica; connections and replicas fill evenly", () => {
  const procs = 2, channels = 8, streams = 10_000;
  for (const replicas of [1, 2, 4]) {
    const perConn = Array.from({ length: procs * channels }, () => 0);
    const perReplica = Array.from({ length: replicas }, () => 0);
    for (let k = 0; k < streams; k++) {
      const p = placeStream(k, procs, channels, replicas, 500);
      assert.equal(p.replica, replicaOfConnection(p.proc, p.channel, channels, replicas));
      perConn[p.proc * channels + p.channel]++;
      perReplica[p.replica]++;
    }
    // A hash, not a rotation: within 15% per connection and 3% per replica at this size.
    const conn = streams / (procs * channels);
    for (const n of perConn) assert.ok(Math.abs(n - conn) < 0.15 * conn, `connections ${perConn}`);
    for (const n of perReplica) {
      assert.ok(Math.abs(n - streams / replicas) < 0.03 * streams / replicas, `replicas ${perReplica}`);
    }
  }
});

Deno.test("placeStream: a service's streams spread over the replicas as independent proxies' would", () => {
  // The bench's sizes: default (1,000 streams, 100 services, 2 × 4 connections), the goal and the
  // mid size (500 services, 2 × 8 connections). A placement that follows k (a rotation) can pin
  // every service to one replica; placed at random, a service with n streams is on one replica of
  // two with chance 2^(1-n): allow up to three times that expectation (at least 2).
  for (const [streams, services, channels] of [[1000, 100, 4], [10_000, 500, 8], [4000, 500, 8]]) {
    const replicas = 2;
    const on = Array.from({ length: services }, () => new Set<number>());
    for (let k = 0; k < streams; k++) {
      on[serviceOf(k, services)].add(placeStream(k, 2, channels, replicas, services).replica);
    }
    const pinned = on.filter((s) => s.size < replicas).length;
    const expected = services * 2 ** (1 - streams / services);
    assert.ok(pinned <= Math.max(2, 3 * expected), `${pinned} of ${services} services on one replica`);
  }
});

Deno.test("placeStream: the first services × replicas streams give each replica one stream of every service", () => {
  for (
    const [procs, channels, replicas, services] of [[2, 8, 2, 500], [2, 4, 3, 100], [3, 1, 3, 7], [
      2,
      4,
      1,
      100,
    ]]
  ) {
    const seen = Array.from({ length: replicas }, () => new Set<number>());
    for (let k = 0; k < services * replicas; k++) {
      const p = placeStream(k, procs, channels, replicas, services);
      assert.ok(p.proc < procs && p.channel < channels, `connection ${p.proc}/${p.channel}`);
      seen[p.replica].add(serviceOf(k, services));
    }
    for (const s of seen) assert.equal(s.size, services);
  }
});
