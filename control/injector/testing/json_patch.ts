/** A minimal RFC 6902 `add` applier for tests: enough to check what an injection patch produces. */

function unescape(s: string): string {
  return s.replaceAll("~1", "/").replaceAll("~0", "~");
}

export function applyPatch<T>(doc: T, ops: { op: string; path: string; value: unknown }[]): T {
  const root = structuredClone(doc) as Record<string, unknown>;
  for (const op of ops) {
    if (op.op !== "add") throw new Error(`unsupported op ${op.op}`);
    const parts = op.path.split("/").slice(1).map(unescape);
    const last = parts.pop()!;
    let cur: unknown = root;
    for (const p of parts) {
      cur = Array.isArray(cur) ? cur[Number(p)] : (cur as Record<string, unknown>)[p];
      if (cur === undefined) throw new Error(`path ${op.path}: ${p} does not exist`);
    }
    if (Array.isArray(cur)) {
      if (last === "-") cur.push(op.value);
      else {
        const i = Number(last);
        if (!(i >= 0 && i <= cur.length)) throw new Error(`path ${op.path}: index out of range`);
        cur.splice(i, 0, op.value);
      }
    } else (cur as Record<string, unknown>)[last] = op.value;
  }
  return root as T;
}
