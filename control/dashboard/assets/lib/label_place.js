// Edge labels that do not crowd: each label tries a few spots along its edge and takes the first whose box
// overlaps no node and no label already placed; a label with no free spot is left out (its edge keeps the
// text in its tooltip and aria-label, and the page's lists). Higher priority labels are placed first. Pure,
// tested from control/dashboard/label_place_test.ts.

/** Rough box of a label in the graph's units: average glyph width for the font size, plus a margin. */
export function labelBox(text, fontPx, bold = false) {
  return { w: text.length * fontPx * (bold ? 0.64 : 0.58) + 6, h: fontPx + 4 };
}

function overlaps(a, b) {
  return a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;
}

/**
 * `labels`: [{ id, w, h, priority, spots: [{ x, y }] }] — spots are label centres, in preference order.
 * `obstacles`: rects { x, y, w, h } no label may cover (the nodes). `bounds`: { width, height } of the
 * drawing; a label is moved inside it, never cut. Returns Map id → { x, y } (centre) for the labels shown.
 */
export function placeLabels(labels, obstacles, bounds) {
  const placed = [];
  const out = new Map();
  const order = [...labels].sort((a, b) =>
    b.priority - a.priority || String(a.id).localeCompare(String(b.id))
  );
  for (const l of order) {
    for (const s of l.spots) {
      const x = Math.min(Math.max(s.x, l.w / 2), bounds.width - l.w / 2);
      const y = Math.min(Math.max(s.y, l.h / 2), bounds.height - l.h / 2);
      const box = { x: x - l.w / 2, y: y - l.h / 2, w: l.w, h: l.h };
      if (obstacles.some((o) => overlaps(box, o)) || placed.some((p) => overlaps(box, p))) continue;
      placed.push(box);
      out.set(l.id, { x, y });
      break;
    }
  }
  return out;
}
