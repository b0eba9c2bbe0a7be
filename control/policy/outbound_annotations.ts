/**
 * What the outbound policy takes from Linkerd's annotations on a route and its Service: timeouts
 * (`timeout.linkerd.io/*`, over the route's own timeouts field), retries (`retry.linkerd.io/*`) and
 * failure accrual (`balancer.linkerd.io/failure-accrual*`). A value that does not parse is ignored,
 * as Linkerd does.
 */
import type {
  ExponentialBackoff,
  FailureAccrual,
  GrpcRoute_Retry,
  HttpRoute_Retry,
} from "../../proto/gen/outbound.ts";
import type { Timeouts } from "../../proto/gen/http_route.ts";
import { parseDurationMs } from "../../proto/go_duration.ts";
import { durationFromMs } from "./duration.ts";
import type { HttpRouteRule, Service } from "./resources.ts";

export const OutboundAnnotations = {
  retryHttp: "retry.linkerd.io/http",
  retryGrpc: "retry.linkerd.io/grpc",
  retryLimit: "retry.linkerd.io/limit",
  retryTimeout: "retry.linkerd.io/timeout",
  timeoutRequest: "timeout.linkerd.io/request",
  timeoutResponse: "timeout.linkerd.io/response",
  timeoutIdle: "timeout.linkerd.io/idle",
  failureAccrual: "balancer.linkerd.io/failure-accrual",
  faMaxFailures: "balancer.linkerd.io/failure-accrual-consecutive-max-failures",
  faMinPenalty: "balancer.linkerd.io/failure-accrual-consecutive-min-penalty",
  faMaxPenalty: "balancer.linkerd.io/failure-accrual-consecutive-max-penalty",
  faJitter: "balancer.linkerd.io/failure-accrual-consecutive-jitter-ratio",
} as const;

/** The route and then its Service: the first one that has the annotation wins. */
export type Annotated = ({ metadata: { annotations?: Record<string, string> } } | undefined)[];

function ann(
  objs: Annotated,
  key: string,
): string | undefined {
  for (const o of objs) {
    const v = o?.metadata.annotations?.[key];
    if (v !== undefined) return v;
  }
  return undefined;
}

function durationAnn(objs: Annotated, key: string) {
  const v = ann(objs, key);
  if (v === undefined) return undefined;
  try {
    return durationFromMs(parseDurationMs(v));
  } catch {
    return undefined; // An unparseable annotation is ignored, as Linkerd does.
  }
}

/** Timeouts: the route field, overridden by route then Service annotations. */
export function routeTimeouts(objs: Annotated, rule?: HttpRouteRule): Timeouts | undefined {
  const field = (v: string | undefined) => {
    if (!v) return undefined;
    try {
      return durationFromMs(parseDurationMs(v));
    } catch {
      return undefined;
    }
  };
  const t: Timeouts = {
    request: durationAnn(objs, OutboundAnnotations.timeoutRequest) ?? field(rule?.timeouts?.request),
    response: durationAnn(objs, OutboundAnnotations.timeoutResponse) ?? field(rule?.timeouts?.backendRequest),
    idle: durationAnn(objs, OutboundAnnotations.timeoutIdle),
  };
  return t.request || t.response || t.idle ? t : undefined;
}

const RETRY_BACKOFF: ExponentialBackoff = {
  minBackoff: durationFromMs(25),
  maxBackoff: durationFromMs(250),
  jitterRatio: 1,
  respectRetryAfterHint: false,
};

export function parseStatusRanges(text: string): { start: number; end: number }[] {
  const out: { start: number; end: number }[] = [];
  for (const part of text.split(",").map((s) => s.trim()).filter(Boolean)) {
    const x = /^([1-5])xx$/.exec(part);
    if (x) {
      out.push({ start: Number(x[1]) * 100, end: Number(x[1]) * 100 + 99 });
      continue;
    }
    const r = /^([0-9]{3})(?:-([0-9]{3}))?$/.exec(part);
    if (!r) throw new Error(`"${part}" is not a status code, range (500-504) or class (5xx)`);
    out.push({ start: Number(r[1]), end: Number(r[2] ?? r[1]) });
  }
  return out;
}

function retryCommon(objs: Annotated) {
  const limit = ann(objs, OutboundAnnotations.retryLimit);
  return {
    maxRetries: limit !== undefined && /^[0-9]+$/.test(limit) ? Number(limit) : 1,
    maxRequestBytes: 64 * 1024,
    timeout: durationAnn(objs, OutboundAnnotations.retryTimeout),
    backoff: RETRY_BACKOFF,
  };
}

export function httpRetry(objs: Annotated): HttpRoute_Retry | undefined {
  const http = ann(objs, OutboundAnnotations.retryHttp);
  if (http === undefined && ann(objs, OutboundAnnotations.retryLimit) === undefined) return undefined;
  let statusRanges: { start: number; end: number }[];
  try {
    statusRanges = parseStatusRanges(http ?? "5xx");
  } catch {
    return undefined;
  }
  return { ...retryCommon(objs), conditions: { statusRanges } };
}

export function grpcRetry(objs: Annotated): GrpcRoute_Retry | undefined {
  const grpc = ann(objs, OutboundAnnotations.retryGrpc);
  if (grpc === undefined && ann(objs, OutboundAnnotations.retryLimit) === undefined) return undefined;
  const names = new Set(
    (grpc ?? "cancelled,deadline-exceeded,resource-exhausted,unavailable").split(",").map((s) => s.trim()),
  );
  return {
    ...retryCommon(objs),
    conditions: {
      cancelled: names.has("cancelled"),
      deadineExceeded: names.has("deadline-exceeded"),
      resourceExhausted: names.has("resource-exhausted"),
      internal: names.has("internal"),
      unavailable: names.has("unavailable"),
    },
  };
}

export function failureAccrual(svc: Service): FailureAccrual | undefined {
  const a = svc.metadata.annotations ?? {};
  if (a[OutboundAnnotations.failureAccrual] !== "consecutive") return undefined;
  const num = (k: string, d: number) => {
    const v = Number(a[k]);
    return a[k] !== undefined && Number.isFinite(v) ? v : d;
  };
  const dur = (k: string, d: number) => {
    try {
      return a[k] !== undefined ? parseDurationMs(a[k]) : d;
    } catch {
      return d;
    }
  };
  return {
    kind: {
      $case: "consecutiveFailures",
      value: {
        maxFailures: num(OutboundAnnotations.faMaxFailures, 7),
        backoff: {
          minBackoff: durationFromMs(dur(OutboundAnnotations.faMinPenalty, 1_000)),
          maxBackoff: durationFromMs(dur(OutboundAnnotations.faMaxPenalty, 60_000)),
          jitterRatio: num(OutboundAnnotations.faJitter, 0.5),
          respectRetryAfterHint: false,
        },
      },
    },
  };
}
