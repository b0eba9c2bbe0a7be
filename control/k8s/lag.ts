/**
 * When an object last changed, as far as its own metadata tells, for the informer lag metric.
 * managedFields alone miss creations and deletions and objects only ever written by server-side
 * apply of another field manager, so every timestamp the API server stamps is considered.
 * All of them have one-second resolution.
 */
import type { KubeObject } from "./types.ts";

export type InformerEventKind = "add" | "update" | "delete";

function parseTime(text: string | undefined): number | undefined {
  if (!text) return undefined;
  const t = Date.parse(text);
  return Number.isNaN(t) ? undefined : t;
}

/** Newest managedFields time (any operation, any subresource), in ms since the epoch. */
export function newestManagedFieldsTime(obj: KubeObject): number | undefined {
  let newest: number | undefined;
  for (const entry of obj.metadata.managedFields ?? []) {
    const t = parseTime(entry.time);
    if (t !== undefined && (newest === undefined || t > newest)) newest = t;
  }
  return newest;
}

/**
 * The time of the change an event reports, or undefined when the object does not tell:
 * - add: the newest of creationTimestamp and managedFields times;
 * - update: the newest managedFields time, only when it moved past `previous` (the change time
 *   recorded for the object before; an update that did not move it has no known change time);
 * - delete: deletionTimestamp once it is in the past (the API server moves it to the moment of
 *   removal when a graceful deletion completes); immediate deletions carry no timestamp.
 */
export function changeTime(
  kind: InformerEventKind,
  obj: KubeObject,
  previous: number | undefined,
  now: number,
): number | undefined {
  switch (kind) {
    case "add": {
      const created = parseTime(obj.metadata.creationTimestamp);
      const managed = newestManagedFieldsTime(obj);
      if (created === undefined) return managed;
      return managed === undefined ? created : Math.max(created, managed);
    }
    case "update": {
      const t = newestManagedFieldsTime(obj);
      if (t === undefined) return undefined;
      return previous !== undefined && t <= previous ? undefined : t;
    }
    case "delete": {
      const t = parseTime(obj.metadata.deletionTimestamp);
      return t !== undefined && t <= now ? t : undefined;
    }
  }
}
