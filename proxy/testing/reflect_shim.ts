/**
 * tsyringe (pulled in by @peculiar/x509) refuses to load unless `Reflect.getMetadata` and friends
 * exist. The test helpers never use decorator metadata, so a WeakMap-backed stand-in suffices.
 */
type MetaKey = string | symbol;
const meta = new WeakMap<object, Map<MetaKey, unknown>>();
const R = Reflect as unknown as Record<string, unknown>;

if (typeof R.getMetadata !== "function") {
  R.defineMetadata = (k: MetaKey, v: unknown, o: object) => {
    const m = meta.get(o) ?? new Map<MetaKey, unknown>();
    m.set(k, v);
    meta.set(o, m);
  };
  R.getOwnMetadata = (k: MetaKey, o: object) => meta.get(o)?.get(k);
  R.getMetadata = (k: MetaKey, o: object) => {
    for (let p: object | null = o; p !== null; p = Object.getPrototypeOf(p)) {
      const m = meta.get(p);
      if (m?.has(k)) return m.get(k);
    }
    return undefined;
  };
}
