/**
 * The tap API's output: one JSON object per line. A TapEvent from a proxy becomes a flat `event` record
 * (addresses as text, durations in microseconds, the stream id as `base:stream`), so the CLI and scripts
 * read it without the proto definitions. The other lines say why the stream ended or a pod failed.
 */
import { fromIpAddress } from "../../proto/ip.ts";
import {
  HttpMethod_Registered,
  Scheme_Registered,
  TapDirection,
  type TapEvent,
  type TcpAddress,
} from "../../proto/tap_api.ts";

export type TapHttpJson =
  | { kind: "request"; id: string; method: string; scheme: string; authority: string; path: string }
  | { kind: "response"; id: string; status: number; sinceRequestInitUs: number }
  | {
    kind: "end";
    id: string;
    sinceRequestInitUs: number;
    sinceResponseInitUs: number;
    responseBytes: number;
    grpcStatus?: number;
    resetCode?: number;
  };

export interface TapEventJson {
  /** `namespace/name` of the pod whose proxy saw the request. */
  pod: string;
  direction: "inbound" | "outbound" | "unknown";
  source: string;
  destination: string;
  sourceLabels: Record<string, string>;
  destinationLabels: Record<string, string>;
  routeLabels: Record<string, string>;
  http: TapHttpJson;
}

export type TapLine =
  | { event: TapEventJson }
  /** A pod whose tap failed or ended early; the others go on. */
  | { error: { pod: string; message: string } }
  /** The last line: why the tap ended, and how many events were dropped because the reader was slow. */
  | {
    end: { reason: "limit" | "pods-ended" | "error"; requests: number; dropped: number; message?: string };
  };

function addr(a: TcpAddress | undefined): string {
  if (!a?.ip) return "";
  try {
    const ip = fromIpAddress(a.ip);
    return ip.includes(":") ? `[${ip}]:${a.port}` : `${ip}:${a.port}`;
  } catch {
    return `?:${a.port}`;
  }
}

function micros(d: { seconds: bigint; nanos: number } | undefined): number {
  if (!d) return 0;
  return Number(d.seconds) * 1_000_000 + Math.round(d.nanos / 1000);
}

function streamId(id: { base: number; stream: bigint } | undefined): string {
  return id ? `${id.base}:${id.stream}` : "?";
}

type Named = { type?: { $case: "registered"; value: number } | { $case: "unregistered"; value: string } };

function methodName(m: Named | undefined): string {
  const t = m?.type;
  if (!t) return "";
  return t.$case === "unregistered" ? t.value : HttpMethod_Registered[t.value] ?? "";
}

function schemeName(m: Named | undefined): string {
  const t = m?.type;
  if (!t) return "";
  return t.$case === "unregistered" ? t.value : (Scheme_Registered[t.value] ?? "").toLowerCase();
}

function direction(d: TapDirection): TapEventJson["direction"] {
  return d === TapDirection.INBOUND ? "inbound" : d === TapDirection.OUTBOUND ? "outbound" : "unknown";
}

/**
 * The JSON record of one proxy event, or undefined for an event without HTTP content. A proxy that does not
 * know the application's side of an outbound request (weft's outbound stack sends no `source`) is shown
 * with `podIp`, the address the request left from, without a port.
 */
export function tapEventJson(pod: string, e: TapEvent, podIp?: string): TapEventJson | undefined {
  const h = e.event?.$case === "http" ? e.event.value.event : undefined;
  if (!h) return undefined;
  let http: TapHttpJson;
  switch (h.$case) {
    case "requestInit": {
      const r = h.value;
      http = {
        kind: "request",
        id: streamId(r.id),
        method: methodName(r.method),
        scheme: schemeName(r.scheme),
        authority: r.authority,
        path: r.path,
      };
      break;
    }
    case "responseInit":
      http = {
        kind: "response",
        id: streamId(h.value.id),
        status: h.value.httpStatus,
        sinceRequestInitUs: micros(h.value.sinceRequestInit),
      };
      break;
    case "responseEnd": {
      const r = h.value;
      http = {
        kind: "end",
        id: streamId(r.id),
        sinceRequestInitUs: micros(r.sinceRequestInit),
        sinceResponseInitUs: micros(r.sinceResponseInit),
        responseBytes: Number(r.responseBytes),
        ...(r.eos?.end?.$case === "grpcStatusCode" ? { grpcStatus: r.eos.end.value } : {}),
        ...(r.eos?.end?.$case === "resetErrorCode" ? { resetCode: r.eos.end.value } : {}),
      };
      break;
    }
  }
  return {
    pod,
    direction: direction(e.proxyDirection),
    source: addr(e.source) || (e.proxyDirection === TapDirection.OUTBOUND && podIp ? podIp : ""),
    destination: addr(e.destination),
    sourceLabels: { ...e.sourceMeta?.labels },
    destinationLabels: { ...e.destinationMeta?.labels },
    routeLabels: { ...e.routeMeta?.labels },
    http,
  };
}
