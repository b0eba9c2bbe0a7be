/**
 * In-memory `MirrorApi` for unit tests: resourceVersions that bump on every write, PUTs refused
 * with "conflict" on a stale version, and a hook to change an object between a read and a write
 * (what another link's service mirror does to a shared federated Service).
 */
import { selects } from "../k8s/label_selector.ts";
import type { KubeObject } from "../k8s/mod.ts";
import type { MirrorApi, ObjectApi, UpdateResult } from "./mirror_api.ts";
import type { Endpoints, Service } from "./mirror_objects.ts";

function parseSelector(sel: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of sel.split(",").filter((p) => p !== "")) {
    const [k, v] = part.split("=");
    out[k] = v;
  }
  return out;
}

export class FakeObjectApi<T extends KubeObject> implements ObjectApi<T> {
  readonly objects = new Map<string, T>();
  #version = 0;
  /** Called before every update is applied; may change the stored objects. */
  beforeUpdate?: (obj: T) => void;
  /** Counts of calls by verb, for assertions. */
  readonly calls: Record<string, number> = { get: 0, create: 0, update: 0, delete: 0, list: 0 };

  #key(ns: string | undefined, name: string | undefined): string {
    return `${ns}/${name}`;
  }

  #stamp(obj: T): T {
    const copy = structuredClone(obj);
    copy.metadata.resourceVersion = String(++this.#version);
    return copy;
  }

  /** Stores `obj` directly (test setup, or another writer). */
  put(obj: T): T {
    const stored = this.#stamp(obj);
    this.objects.set(this.#key(obj.metadata.namespace, obj.metadata.name), stored);
    return structuredClone(stored);
  }

  peek(ns: string, name: string): T | undefined {
    return this.objects.get(this.#key(ns, name));
  }

  get(ns: string, name: string): Promise<T | undefined> {
    this.calls.get++;
    const o = this.objects.get(this.#key(ns, name));
    return Promise.resolve(o ? structuredClone(o) : undefined);
  }

  create(obj: T): Promise<"created" | "exists"> {
    this.calls.create++;
    const key = this.#key(obj.metadata.namespace, obj.metadata.name);
    if (this.objects.has(key)) return Promise.resolve("exists");
    this.objects.set(key, this.#stamp(obj));
    return Promise.resolve("created");
  }

  update(obj: T): Promise<UpdateResult> {
    this.calls.update++;
    this.beforeUpdate?.(obj);
    const key = this.#key(obj.metadata.namespace, obj.metadata.name);
    const cur = this.objects.get(key);
    if (!cur) return Promise.resolve("gone");
    if (obj.metadata.resourceVersion && cur.metadata.resourceVersion !== obj.metadata.resourceVersion) {
      return Promise.resolve("conflict");
    }
    this.objects.set(key, this.#stamp(obj));
    return Promise.resolve("ok");
  }

  delete(ns: string, name: string): Promise<void> {
    this.calls.delete++;
    this.objects.delete(this.#key(ns, name));
    return Promise.resolve();
  }

  deleteAt(ns: string, name: string, resourceVersion: string): Promise<UpdateResult> {
    this.calls.delete++;
    const key = this.#key(ns, name);
    const cur = this.objects.get(key);
    if (!cur) return Promise.resolve("gone");
    if (cur.metadata.resourceVersion !== resourceVersion) return Promise.resolve("conflict");
    this.objects.delete(key);
    return Promise.resolve("ok");
  }

  list(labelSelector: string): Promise<T[]> {
    this.calls.list++;
    const sel = { matchLabels: parseSelector(labelSelector) };
    return Promise.resolve(
      [...this.objects.values()].filter((o) => selects(sel, o.metadata.labels)).map((o) =>
        structuredClone(o)
      ),
    );
  }
}

export class FakeMirrorApi implements MirrorApi {
  readonly services = new FakeObjectApi<Service>();
  readonly endpoints = new FakeObjectApi<Endpoints>();
}
