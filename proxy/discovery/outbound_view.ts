/**
 * What the outbound side needs from an OutboundPolicies.Watch message, converted once per update
 * where discovery receives it: the port's protocol and detection timeout, the backend an L4
 * connection uses, and the compiled HTTP routes. The stacks read this, never the message.
 */
import type { Backend, OutboundPolicy } from "../../proto/gen_messages/outbound.ts";
import { durationMs } from "../core/duration.ts";
import { type Endpoint, endpointFromWire } from "../core/endpoint.ts";
import { compileOutboundPolicy, type OutboundPolicyRoutes } from "../route/outbound.ts";
import { compileL4, type L4Policy } from "../route/l4.ts";

/** The backend an L4 (opaque or undetected) connection goes to. */
export type PolicyBackend = { kind: "forward"; endpoint: Endpoint } | { kind: "balancer"; path: string };

export type PolicyProtocol = "detect" | "http1" | "http2" | "grpc" | "opaque" | "tls";

export interface OutboundView {
  readonly protocol: PolicyProtocol | undefined;
  /** `detect.timeout`, when the policy sets a valid one. */
  readonly detectTimeoutMs: number | undefined;
  readonly l4: PolicyBackend | undefined;
  /**
   * The compiled HTTP routes. After an update whose routes do not compile, the previous ones (and
   * `httpError` says why); undefined until some update compiled.
   */
  readonly http: OutboundPolicyRoutes | undefined;
  readonly httpError: string | undefined;
  /**
   * The compiled opaque or TLS routes (route choice, refusals, backends). After an update whose
   * routes do not compile, the previous ones; undefined when the policy has none.
   */
  readonly l4Routes: L4Policy | undefined;
}

function fromBackend(b: Backend | undefined): PolicyBackend | undefined {
  switch (b?.kind?.$case) {
    case "forward": {
      const endpoint = endpointFromWire(b.kind.value);
      return endpoint ? { kind: "forward", endpoint } : undefined;
    }
    case "balancer": {
      const d = b.kind.value.discovery?.kind;
      return d?.$case === "dst" ? { kind: "balancer", path: d.value.path } : undefined;
    }
    default:
      return undefined;
  }
}

type AnyDistribution = {
  kind?:
    | { $case: "empty"; value: unknown }
    | { $case: "firstAvailable"; value: { backends: { backend?: Backend }[] } }
    | { $case: "randomAvailable"; value: { backends: { backend?: { backend?: Backend } }[] } }
    | undefined;
};

function fromDistribution(d: AnyDistribution | undefined): PolicyBackend | undefined {
  switch (d?.kind?.$case) {
    case "firstAvailable":
      return fromBackend(d.kind.value.backends[0]?.backend);
    case "randomAvailable":
      return fromBackend(d.kind.value.backends[0]?.backend?.backend);
    default:
      return undefined;
  }
}

/** The backend an L4 connection uses: the first rule's first backend of the opaque (or first) route. */
export function policyBackend(p: OutboundPolicy): PolicyBackend | undefined {
  const k = p.protocol?.kind;
  if (!k) return undefined;
  const routes: { rules: { backends?: AnyDistribution }[] }[] = k.$case === "detect"
    ? k.value.opaque?.routes ?? []
    : k.$case === "http1" || k.$case === "http2" || k.$case === "grpc" || k.$case === "opaque" ||
        k.$case === "tls"
    ? k.value.routes
    : [];
  for (const r of routes) {
    for (const rule of r.rules) {
      const b = fromDistribution(rule.backends);
      if (b) return b;
    }
  }
  return undefined;
}

/** The view of `msg`; `prev` supplies the routes when this update's do not compile. */
export function outboundView(prev: OutboundView | undefined, msg: OutboundPolicy): OutboundView {
  const k = msg.protocol?.kind;
  let detectTimeoutMs: number | undefined;
  if (k?.$case === "detect") {
    try {
      detectTimeoutMs = durationMs(k.value.timeout, "detect.timeout");
    } catch {
      // An invalid duration: the proxy's configured default applies.
    }
  }
  let http = prev?.http;
  let httpError: string | undefined;
  try {
    http = compileOutboundPolicy(msg);
  } catch (e) {
    httpError = (e as Error).message;
  }
  let l4Routes: L4Policy | undefined;
  try {
    l4Routes = compileL4(msg);
  } catch {
    l4Routes = prev?.l4Routes;
  }
  return { protocol: k?.$case, detectTimeoutMs, l4: policyBackend(msg), http, httpError, l4Routes };
}
