/**
 * A tap client for tests: grpc-js (an implementation independent of the proxy's own HTTP/2 and
 * gRPC code) calling `Tap.Observe` over TLS with a client certificate, or with none, or in
 * plaintext. Returns every event and the call's final status.
 */
import * as grpc from "@grpc/grpc-js";
import { Buffer } from "node:buffer";
import { ObserveRequest, TAP_OBSERVE_PATH, TapEvent } from "../../proto/tap_messages.ts";
import { fromTcpAddress } from "../../proto/ip.ts";

export interface TapClientOptions {
  /** `ip:port` of the proxy's control port. */
  addr: string;
  /** The proxy's identity: its certificate must name it (also sent as SNI). */
  serverId: string;
  caPem: string;
  /** The client's certificate and key; absent: TLS without a client certificate. */
  client?: { certChainPem: string; keyPem: string };
  /** No TLS at all. */
  plaintext?: boolean;
  timeoutMs: number;
}

export interface TapResult {
  events: TapEvent[];
  /** gRPC status code of the call (0 when the stream ended cleanly). */
  code: number;
  details: string;
}

export function observe(o: TapClientOptions, req: ObserveRequest): Promise<TapResult> {
  const enc = new TextEncoder();
  const creds = o.plaintext ? grpc.credentials.createInsecure() : grpc.credentials.createSsl(
    Buffer.from(enc.encode(o.caPem)),
    o.client ? Buffer.from(enc.encode(o.client.keyPem)) : null,
    o.client ? Buffer.from(enc.encode(o.client.certChainPem)) : null,
    {
      checkServerIdentity: (_host, cert) =>
        (cert.subjectaltname ?? "").split(", ").includes(`DNS:${o.serverId}`)
          ? undefined
          : new Error(`server presented ${cert.subjectaltname}, want ${o.serverId}`),
    },
  );
  const client = new grpc.Client(o.addr, creds, {
    "grpc.ssl_target_name_override": o.serverId,
    "grpc.default_authority": o.serverId,
  });
  const events: TapEvent[] = [];
  return new Promise((resolve) => {
    let settled = false;
    const done = (code: number, details: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      client.close();
      resolve({ events, code, details });
    };
    const call = client.makeServerStreamRequest(
      TAP_OBSERVE_PATH,
      (m: ObserveRequest) => Buffer.from(ObserveRequest.encode(m).finish()),
      (b: Buffer) => TapEvent.decode(new Uint8Array(b)),
      req,
      { deadline: Date.now() + o.timeoutMs },
    );
    const timer = setTimeout(() => call.cancel(), o.timeoutMs + 1000);
    call.on("data", (ev: TapEvent) => events.push(ev));
    call.on("error", (e: grpc.ServiceError) => done(e.code, e.details));
    call.on("status", (s: grpc.StatusObject) => done(s.code, s.details));
  });
}

/** Label maps and the HTTP event of a TapEvent, flattened for assertions and printing. */
export function summarize(ev: TapEvent): Record<string, unknown> {
  const h = ev.event?.value.event;
  const id = h?.value.id;
  const base = {
    direction: ev.proxyDirection,
    srcAddr: ev.source ? fromTcpAddress(ev.source) : undefined,
    dstAddr: ev.destination ? fromTcpAddress(ev.destination) : undefined,
    src: ev.sourceMeta?.labels,
    dst: ev.destinationMeta?.labels,
    stream: id ? `${id.base}:${id.stream}` : undefined,
  };
  switch (h?.$case) {
    case "requestInit":
      return { ...base, kind: "request", path: h.value.path, authority: h.value.authority };
    case "responseInit":
      return { ...base, kind: "response", status: h.value.httpStatus };
    case "responseEnd":
      return {
        ...base,
        kind: "end",
        bytes: Number(h.value.responseBytes),
        grpcStatus: h.value.eos?.end?.$case === "grpcStatusCode" ? h.value.eos.end.value : undefined,
        reset: h.value.eos?.end?.$case === "resetErrorCode" ? h.value.eos.end.value : undefined,
      };
    default:
      return { ...base, kind: "other" };
  }
}
