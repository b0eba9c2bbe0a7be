// Edge-label placement for the topology graph (assets/lib/label_place.js, plain JS served to the browser).
import assert from "node:assert/strict";
import { labelBox, placeLabels } from "./assets/lib/label_place.js";

const bounds = { width: 300, height: 100 };

Deno.test("placeLabels: a label that would cover another takes its next spot, else is left out", () => {
  const a = { id: "a", w: 60, h: 14, priority: 2, spots: [{ x: 100, y: 50 }] };
  const b = { id: "b", w: 60, h: 14, priority: 1, spots: [{ x: 110, y: 52 }, { x: 200, y: 52 }] };
  const c = { id: "c", w: 60, h: 14, priority: 0, spots: [{ x: 105, y: 50 }] };
  const got = placeLabels([c, b, a], [], bounds);
  assert.deepEqual(got.get("a"), { x: 100, y: 50 }, "the highest priority keeps its first spot");
  assert.deepEqual(got.get("b"), { x: 200, y: 52 });
  assert.equal(got.has("c"), false, "no free spot: not drawn rather than drawn over another");
});

Deno.test("placeLabels: labels avoid the nodes and stay inside the drawing", () => {
  const node = { x: 80, y: 30, w: 40, h: 40 };
  const got = placeLabels(
    [
      { id: "on-node", w: 20, h: 10, priority: 1, spots: [{ x: 100, y: 50 }, { x: 150, y: 50 }] },
      { id: "edge", w: 40, h: 10, priority: 0, spots: [{ x: 5, y: 98 }] },
    ],
    [node],
    bounds,
  );
  assert.deepEqual(got.get("on-node"), { x: 150, y: 50 });
  assert.deepEqual(got.get("edge"), { x: 20, y: 95 }, "moved in so nothing is cut at the edges");
});

Deno.test("labelBox: wider for longer and bold text", () => {
  const plain = labelBox("0.5rps 100.00%", 11);
  assert.ok(labelBox("0.5rps 100.00% · no mTLS", 11).w > plain.w);
  assert.ok(labelBox("0.5rps 100.00%", 11, true).w > plain.w);
  assert.equal(plain.h, 15);
});
