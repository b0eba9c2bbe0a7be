/**
 * The three `Reflect` metadata functions that tsyringe (a dependency of @peculiar/x509) checks for
 * at load time. Nothing here stores decorator type data, so a per-object map is all it needs;
 * importing this module before @peculiar/x509 avoids pulling in a full polyfill package.
 */
type Key = string | symbol;
const store = new WeakMap<object, Map<Key, unknown>>();

interface MetadataReflect {
  getMetadata?: (key: Key, target: object) => unknown;
  getOwnMetadata?: (key: Key, target: object) => unknown;
  defineMetadata?: (key: Key, value: unknown, target: object) => void;
}

const R = Reflect as unknown as MetadataReflect;
if (!R.getMetadata) {
  R.getOwnMetadata = (key, target) => store.get(target)?.get(key);
  R.getMetadata = (key, target) => {
    for (let t: object | null = target; t; t = Object.getPrototypeOf(t)) {
      const m = store.get(t);
      if (m?.has(key)) return m.get(key);
    }
    return undefined;
  };
  R.defineMetadata = (key, value, target) => {
    let m = store.get(target);
    if (!m) store.set(target, m = new Map());
    m.set(key, value);
  };
}
