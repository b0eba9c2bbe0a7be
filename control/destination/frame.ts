/**
 * Encodes `Update` messages from already encoded WeightedAddrs, so an endpoint is encoded once
 * per change and every stream of a shared view sends the same bytes (protobuf lets a repeated
 * field's elements be appended after the other fields of the message).
 */
import { Update, WeightedAddrSet } from "../../proto/gen/destination.ts";
import type { TcpAddress } from "../../proto/gen/net.ts";

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

/** `Update{add: WeightedAddrSet{addrs, metric_labels}}` from encoded WeightedAddrs. */
export function encodeAdd(addrs: readonly Uint8Array[], setLabels: Record<string, string>): Uint8Array {
  const head = WeightedAddrSet.encode({ addrs: [], metricLabels: setLabels }).finish();
  let body = head.length;
  for (const a of addrs) body += 1 + varintLength(a.length) + a.length;
  const out = new Uint8Array(1 + varintLength(body) + body);
  let at = 0;
  out[at++] = FIELD1_LEN;
  at = writeVarint(out, at, body);
  out.set(head, at);
  at += head.length;
  for (const a of addrs) {
    out[at++] = FIELD1_LEN;
    at = writeVarint(out, at, a.length);
    out.set(a, at);
    at += a.length;
  }
  return out;
}

export function encodeRemove(addrs: TcpAddress[]): Uint8Array {
  return Update.encode({ update: { $case: "remove", value: { addrs } } }).finish();
}

export function encodeNoEndpoints(exists: boolean): Uint8Array {
  return Update.encode({ update: { $case: "noEndpoints", value: { exists } } }).finish();
}
