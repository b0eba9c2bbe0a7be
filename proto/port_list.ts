/**
 * Port lists, as the annotations `config.linkerd.io/opaque-ports`, `skip-inbound-ports` and
 * `skip-outbound-ports`, the proxy's `LINKERD2_PROXY_INBOUND_PORTS*` variables and init's
 * `--*-ports-to-ignore` flags write them: comma-separated entries, each a port (`3306`), a range
 * (`8000-8080`, both ends included) or, in annotations only, the name of a container port
 * (`mysql`), resolved against the pod. Spaces around entries and empty entries are ignored.
 *
 * One grammar for every reader, so the destination, the policy controller, the injector, init and
 * the proxy agree on what a value means. Ports are 1-65535 (0 is not a port anything listens on,
 * so an entry of 0 is reported as a mistake). Each bad entry is an error of its own, naming the
 * entry and the annotation or variable; what a caller does with one is the caller's choice.
 */

export interface PortRange {
  from: number;
  to: number;
}

export type PortListEntry = { kind: "range"; from: number; to: number } | { kind: "name"; name: string };

export class PortListError extends Error {
  override name = "PortListError";
  constructor(readonly what: string, readonly entry: string, readonly reason: string) {
    super(`${what}: ${reason}`);
  }
}

export interface PortList {
  /** The annotation or variable the text came from, for messages. */
  what: string;
  entries: PortListEntry[];
  /** One per entry that is not a port, a range or a port name. */
  errors: PortListError[];
}

const NUMBER = /^[0-9]+$/;
const RANGE = /^([0-9]+)-([0-9]+)$/;
// A Kubernetes container port name (IANA_SVC_NAME): lowercase letters, digits and inner single
// hyphens, at least one letter, at most 15 characters. It can never look like a number or range.
const PORT_NAME = /^(?=.*[a-z])[a-z0-9]([a-z0-9]|-(?!-))*$/;

function port(text: string): number | undefined {
  const n = Number(text);
  return text.length <= 5 && n >= 1 && n <= 65535 ? n : undefined;
}

function parseEntry(item: string, what: string): PortListEntry | PortListError {
  if (NUMBER.test(item)) {
    const p = port(item);
    return p === undefined
      ? new PortListError(what, item, `"${item}" is not a port in 1-65535`)
      : { kind: "range", from: p, to: p };
  }
  const r = RANGE.exec(item);
  if (r) {
    const from = port(r[1]), to = port(r[2]);
    if (from === undefined || to === undefined) {
      return new PortListError(what, item, `range "${item}" is not within 1-65535`);
    }
    if (from > to) return new PortListError(what, item, `range "${item}" ends before it starts`);
    return { kind: "range", from, to };
  }
  if (item.length <= 15 && PORT_NAME.test(item)) return { kind: "name", name: item };
  return new PortListError(
    what,
    item,
    `"${item}" is not a port (1-65535), a range such as 8000-8080 or a container port name`,
  );
}

/** Parses every entry; bad entries are returned as errors beside the good ones. */
export function parsePortList(text: string, what: string): PortList {
  const out: PortList = { what, entries: [], errors: [] };
  for (const raw of text.split(",")) {
    const item = raw.trim();
    if (item === "") continue;
    const e = parseEntry(item, what);
    if (e instanceof PortListError) out.errors.push(e);
    else out.entries.push(e);
  }
  return out;
}

/** Resolves port names with `portOfName`; a name nothing answers to is an error. */
export function resolvePortList(
  list: PortList,
  portOfName: (name: string) => number | undefined,
): { ranges: PortRange[]; errors: PortListError[] } {
  const ranges: PortRange[] = [];
  const errors: PortListError[] = [];
  for (const e of list.entries) {
    if (e.kind === "range") {
      ranges.push({ from: e.from, to: e.to });
      continue;
    }
    const p = portOfName(e.name);
    if (p === undefined) {
      errors.push(new PortListError(list.what, e.name, `no container port is named "${e.name}"`));
    } else ranges.push({ from: p, to: p });
  }
  return { ranges, errors };
}

/** Whether `port` is listed, names looked up with `portOfName`; bad entries count for nothing. */
export function portListHas(
  list: PortList,
  port: number,
  portOfName: (name: string) => number | undefined,
): boolean {
  for (const e of list.entries) {
    if (e.kind === "range" ? port >= e.from && port <= e.to : portOfName(e.name) === port) return true;
  }
  return false;
}

/**
 * The numeric form (proxy variables, init flags, control-plane flags): numbers and ranges only,
 * since names were resolved by whoever wrote the value. Throws the first bad entry.
 */
export function parsePortRanges(text: string, what: string): PortRange[] {
  const list = parsePortList(text, what);
  if (list.errors.length > 0) throw list.errors[0];
  return list.entries.map((e) => {
    if (e.kind === "name") {
      throw new PortListError(
        what,
        e.name,
        `"${e.name}" is a port name; only ports and ranges are accepted here`,
      );
    }
    return { from: e.from, to: e.to };
  });
}

export function portInRanges(port: number, ranges: readonly PortRange[]): boolean {
  return ranges.some((r) => port >= r.from && port <= r.to);
}

export function formatPortRanges(ranges: readonly PortRange[]): string {
  return ranges.map((r) => r.from === r.to ? `${r.from}` : `${r.from}-${r.to}`).join(",");
}

/**
 * A parse cache for annotation values, which recur on every pod of a workload; `onErrors` hears
 * about a value's bad entries once, when the value is first parsed.
 */
export function portListCache(
  what: string,
  onErrors: (errors: PortListError[]) => void,
  capacity = 1000,
): (text: string) => PortList {
  const cache = new Map<string, PortList>();
  return (text) => {
    let v = cache.get(text);
    if (!v) {
      if (cache.size >= capacity) cache.clear();
      v = parsePortList(text, what);
      cache.set(text, v);
      if (v.errors.length > 0) onErrors(v.errors);
    }
    return v;
  };
}
