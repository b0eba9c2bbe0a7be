/**
 * Port list annotations (`config.linkerd.io/opaque-ports`, `skip-inbound-ports`): comma
 * separated numbers, ranges `a-b` and port names, resolved against the object's named ports.
 */

export interface PortList {
  numbers: Set<number>;
  ranges: [number, number][];
  names: Set<string>;
}

export function parsePortList(text: string): PortList {
  const out: PortList = { numbers: new Set(), ranges: [], names: new Set() };
  for (const raw of text.split(",")) {
    const item = raw.trim();
    if (item === "") continue;
    const range = /^(\d+)-(\d+)$/.exec(item);
    if (range) out.ranges.push([Number(range[1]), Number(range[2])]);
    else if (/^\d+$/.test(item)) out.numbers.add(Number(item));
    else out.names.add(item);
  }
  return out;
}

/** Whether `port` is in the list; names are looked up with `portOfName`. */
export function portListHas(
  list: PortList,
  port: number,
  portOfName: (name: string) => number | undefined,
): boolean {
  if (list.numbers.has(port)) return true;
  for (const [lo, hi] of list.ranges) if (port >= lo && port <= hi) return true;
  for (const name of list.names) if (portOfName(name) === port) return true;
  return false;
}

const cache = new Map<string, PortList>();

/** Parses with a small cache: the same annotation text recurs on every pod of a workload. */
export function cachedPortList(text: string): PortList {
  let v = cache.get(text);
  if (!v) {
    if (cache.size > 1000) cache.clear();
    cache.set(text, v = parsePortList(text));
  }
  return v;
}
