/**
 * Encodes `Update` messages from already encoded WeightedAddrs, so an endpoint is encoded once
 * per change and every stream of a shared view sends the same bytes (protobuf lets a repeated
 * field's elements be appended after the other fields of the message). The client-dependent
 * `zone_locality` label is one more `metric_labels` map entry appended to an address's bytes,
 * so an endpoint keeps a single encoding whatever its clients' zones.
 */
import { Update, WeightedAddr, WeightedAddrSet } from "../../proto/gen/destination.ts";
import type { TcpAddress } from "../../proto/gen/net.ts";

export type Locality = "local" | "remote" | "unknown";

/** The encoded `metric_labels` entry `zone_locality=<locality>` (field 4), per locality. */
const ZONE_ENTRY: Record<Locality, Uint8Array> = {
  local: zoneEntry("local"),
  remote: zoneEntry("remote"),
  unknown: zoneEntry("unknown"),
};

function zoneEntry(locality: Locality): Uint8Array {
  return WeightedAddr.encode({ weight: 0, metricLabels: { zone_locality: locality } }).finish();
}

/** One address of an Add: its bytes without `zone_locality`, and the client's locality. */
export interface LocatedAddr {
  base: Uint8Array;
  locality: Locality;
}

function varintLength(n: number): number {
  let len = 1;
  while (n >= 0x80) {
    n = Math.floor(n / 128);
    len++;
  }
  return len;
}

function writeVarint(buf: Uint8Array, at: number, n: number): number {
  while (n >= 0x80) {
    buf[at++] = (n & 0x7f) | 0x80;
    n = Math.floor(n / 128);
  }
  buf[at++] = n;
  return at;
}

/** Tag of field 1, wire type 2 (length-delimited). */
const FIELD1_LEN = 0x0a;

/**
 * `Update{add: WeightedAddrSet{addrs, metric_labels}}` from encoded WeightedAddrs, each given
 * `zone_locality` for the client it is sent to.
 */
export function encodeAdd(addrs: readonly LocatedAddr[], setLabels: Record<string, string>): Uint8Array {
  const head = WeightedAddrSet.encode({ addrs: [], metricLabels: setLabels }).finish();
  let body = head.length;
  for (const a of addrs) {
    const len = a.base.length + ZONE_ENTRY[a.locality].length;
    body += 1 + varintLength(len) + len;
  }
  const out = new Uint8Array(1 + varintLength(body) + body);
  let at = 0;
  out[at++] = FIELD1_LEN;
  at = writeVarint(out, at, body);
  out.set(head, at);
  at += head.length;
  for (const a of addrs) {
    const zone = ZONE_ENTRY[a.locality];
    out[at++] = FIELD1_LEN;
    at = writeVarint(out, at, a.base.length + zone.length);
    out.set(a.base, at);
    at += a.base.length;
    out.set(zone, at);
    at += zone.length;
  }
  return out;
}

export function encodeRemove(addrs: TcpAddress[]): Uint8Array {
  return Update.encode({ update: { $case: "remove", value: { addrs } } }).finish();
}

export function encodeNoEndpoints(exists: boolean): Uint8Array {
  return Update.encode({ update: { $case: "noEndpoints", value: { exists } } }).finish();
}

/** A whole `Update`, as a union of members reads what its members' views sent (multicluster_endpoints.ts). */
export type { Update };

export function decodeUpdate(bytes: Uint8Array): Update {
  return Update.decode(bytes);
}

/** `Update{add}` from address messages that already carry their `zone_locality`. */
export function encodeAddMessages(addrs: WeightedAddr[], setLabels: Record<string, string>): Uint8Array {
  return Update.encode({ update: { $case: "add", value: { addrs, metricLabels: setLabels } } }).finish();
}

export function encodeWeightedAddr(addr: WeightedAddr): Uint8Array {
  return WeightedAddr.encode(addr).finish();
}
