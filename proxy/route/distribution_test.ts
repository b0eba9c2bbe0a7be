import assert from "node:assert/strict";
import { seededRng } from "../core/rng.ts";
import { Distribution } from "./distribution.ts";

Deno.test("distribution: weighted split holds within tolerance over 10k picks (seeded)", () => {
  const d = Distribution.randomAvailable([
    { backend: "v1", weight: 90 },
    { backend: "v2", weight: 10 },
    { backend: "off", weight: 0 },
  ]);
  const rng = seededRng(42);
  const n: Record<string, number> = { v1: 0, v2: 0, off: 0 };
  for (let i = 0; i < 10_000; i++) n[d.choose(rng)!]++;
  assert.equal(n.off, 0, "weight 0 gets nothing");
  assert.ok(Math.abs(n.v2 - 1_000) < 100, JSON.stringify(n));

  const thirds = Distribution.randomAvailable([
    { backend: "a", weight: 3_334 },
    { backend: "b", weight: 3_333 },
    { backend: "c", weight: 3_333 },
  ]);
  const m: Record<string, number> = { a: 0, b: 0, c: 0 };
  for (let i = 0; i < 30_000; i++) m[thirds.choose(rng)!]++;
  for (const k of ["a", "b", "c"]) assert.ok(Math.abs(m[k] - 10_000) < 300, JSON.stringify(m));
});

Deno.test("distribution: unavailable backends are skipped by weight; none available keeps the draw", () => {
  const d = Distribution.randomAvailable([
    { backend: "a", weight: 50 },
    { backend: "b", weight: 25 },
    { backend: "c", weight: 25 },
  ]);
  const rng = seededRng(3);
  const n: Record<string, number> = { a: 0, b: 0, c: 0 };
  for (let i = 0; i < 10_000; i++) n[d.choose(rng, (x) => x !== "a")!]++;
  assert.equal(n.a, 0);
  assert.ok(Math.abs(n.b - n.c) < 300, JSON.stringify(n));
  const seen = new Set<string>();
  for (let i = 0; i < 100; i++) seen.add(d.choose(rng, () => false)!);
  assert.ok(seen.size > 1, "no backend available: the weighted draw stands");
});

Deno.test("distribution: first available, empty, all-zero", () => {
  const first = Distribution.firstAvailable(["primary", "secondary"]);
  assert.equal(first.choose(Math.random), "primary");
  assert.equal(first.choose(Math.random, (b) => b !== "primary"), "secondary");
  assert.equal(first.choose(Math.random, () => false), "primary");
  assert.equal(Distribution.empty<string>().choose(Math.random), undefined);
  assert.equal(Distribution.randomAvailable([{ backend: "x", weight: 0 }]).choose(Math.random), undefined);
});
