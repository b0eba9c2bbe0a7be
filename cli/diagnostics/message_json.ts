/**
 * Decoded protobuf messages as readable JSON for `-o json`: oneofs as `{case: value}` (proto3
 * JSON's shape), IP addresses and networks as text, durations as `"1.5s"`, 64-bit integers as
 * strings and bytes as base64, so the whole message survives `JSON.stringify`.
 */
import { Buffer } from "node:buffer";
import { formatIpv4, formatIpv6Bytes } from "../../proto/ip.ts";

type Plain = null | boolean | number | string | Plain[] | { [k: string]: Plain };

function ipText(v: { $case: string; value: unknown }): string | undefined {
  if (v.$case === "ipv4" && typeof v.value === "number") return formatIpv4(v.value);
  if (v.$case === "ipv6" && v.value && typeof v.value === "object") {
    const { first, last } = v.value as { first?: bigint; last?: bigint };
    if (typeof first === "bigint" && typeof last === "bigint") {
      const b = new Uint8Array(16);
      const view = new DataView(b.buffer);
      view.setBigUint64(0, first);
      view.setBigUint64(8, last);
      return formatIpv6Bytes(b);
    }
  }
  return undefined;
}

function isDuration(o: Record<string, unknown>): boolean {
  const keys = Object.keys(o);
  return keys.length === 2 && typeof o.seconds === "bigint" && typeof o.nanos === "number";
}

export function messageJson(v: unknown): Plain {
  if (v === undefined || v === null) return null;
  if (typeof v === "bigint") return v.toString();
  if (typeof v === "boolean" || typeof v === "number" || typeof v === "string") return v;
  if (v instanceof Uint8Array) return Buffer.from(v).toString("base64");
  if (Array.isArray(v)) return v.map(messageJson);
  if (typeof v !== "object") return String(v);
  const o = v as Record<string, unknown>;
  if (typeof o.$case === "string" && "value" in o) {
    return { [o.$case]: messageJson(o.value) };
  }
  // IPAddress: `{ip: {$case: "ipv4"|"ipv6", value}}`.
  const ip = o.ip as { $case?: string; value?: unknown } | undefined;
  if (Object.keys(o).length === 1 && ip && typeof ip.$case === "string") {
    const text = ipText(ip as { $case: string; value: unknown });
    if (text !== undefined) return text;
  }
  if (isDuration(o)) {
    const s = Number(o.seconds as bigint) + (o.nanos as number) / 1e9;
    return `${s}s`;
  }
  const out: { [k: string]: Plain } = {};
  for (const [k, x] of Object.entries(o)) {
    if (x === undefined) continue;
    out[k] = messageJson(x);
  }
  return out;
}
