/** Applies the RFC 6902 `add`/`replace` operations the injector's patch is made of, to a copy. */

export interface PatchOp {
  op: string;
  path: string;
  value: unknown;
}

function unescape(s: string): string {
  return s.replaceAll("~1", "/").replaceAll("~0", "~");
}

export function applyJsonPatch<T>(doc: T, ops: PatchOp[]): T {
  const root = structuredClone(doc) as Record<string, unknown>;
  for (const op of ops) {
    if (op.op !== "add" && op.op !== "replace") throw new Error(`JSON patch: unsupported op "${op.op}"`);
    const parts = op.path.split("/").slice(1).map(unescape);
    const last = parts.pop();
    if (last === undefined) throw new Error(`JSON patch: path "${op.path}" names the document itself`);
    let cur: unknown = root;
    for (const p of parts) {
      cur = Array.isArray(cur) ? cur[Number(p)] : (cur as Record<string, unknown> | undefined)?.[p];
      if (cur === undefined || cur === null) {
        throw new Error(`JSON patch: "${op.path}": "${p}" does not exist`);
      }
    }
    if (Array.isArray(cur)) {
      const i = last === "-" ? cur.length : Number(last);
      if (!Number.isInteger(i) || i < 0 || i > cur.length || (op.op === "replace" && i >= cur.length)) {
        throw new Error(`JSON patch: "${op.path}": index out of range`);
      }
      if (op.op === "add") cur.splice(i, 0, op.value);
      else cur[i] = op.value;
    } else {
      const obj = cur as Record<string, unknown>;
      if (op.op === "replace" && !(last in obj)) throw new Error(`JSON patch: "${op.path}" does not exist`);
      obj[last] = op.value;
    }
  }
  return root as T;
}
