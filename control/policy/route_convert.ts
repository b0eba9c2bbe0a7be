/**
 * HTTPRoute and GRPCRoute matches, hostnames and filters turned into the shared `http_route` /
 * `grpc_route` messages. Each converter throws an Error naming the field when the route cannot be
 * expressed; the index then ignores the route and its status says why.
 */
import { toHttpMethod } from "../../proto/http_method.ts";
import { rustRegexProblem } from "../../proto/rust_regex.ts";
import type { GrpcRouteMatch as ProtoGrpcMatch } from "../../proto/gen/grpc_route.ts";
import type {
  HeaderMatch,
  HostMatch,
  HttpRouteMatch as ProtoHttpMatch,
  QueryParamMatch,
  RequestHeaderModifier,
  RequestRedirect,
} from "../../proto/gen/http_route.ts";
import { type HttpMethod, type Scheme, Scheme_Registered } from "../../proto/gen/http_types.ts";
import type { Metadata } from "../../proto/gen/meta.ts";
import type {
  GrpcRouteMatch,
  HeaderModifier,
  HttpHeaderMatch,
  HttpRouteMatch,
  RouteFilter,
} from "./resources.ts";

const encoder = new TextEncoder();

/**
 * A route regex checked in the dialect the proxy evaluates (Rust regex syntax, as Linkerd's proxy does) and
 * passed on unchanged: the proxy API carries the user's pattern, never a translation.
 */
export function checkRegex(pattern: string, field: string): string {
  const why = rustRegexProblem(pattern);
  if (why !== undefined) throw new Error(`${field}: "${pattern}" is not a valid regular expression: ${why}`);
  return pattern;
}

export function hostMatch(hostname: string): HostMatch {
  if (hostname.startsWith("*.")) {
    return { match: { $case: "suffix", value: { reverseLabels: hostname.slice(2).split(".").reverse() } } };
  }
  return { match: { $case: "exact", value: hostname } };
}

export function httpMethod(m: string): HttpMethod {
  return toHttpMethod(m);
}

function headerMatch(h: HttpHeaderMatch, field: string): HeaderMatch {
  if (h.type === "RegularExpression") {
    return { name: h.name, value: { $case: "regex", value: checkRegex(h.value, `${field}.value`) } };
  }
  if (h.type !== undefined && h.type !== "Exact") {
    throw new Error(`${field}.type: "${h.type}" is not supported`);
  }
  return { name: h.name, value: { $case: "exact", value: encoder.encode(h.value) } };
}

function queryMatch(h: HttpHeaderMatch, field: string): QueryParamMatch {
  if (h.type === "RegularExpression") {
    return { name: h.name, value: { $case: "regex", value: checkRegex(h.value, `${field}.value`) } };
  }
  if (h.type !== undefined && h.type !== "Exact") {
    throw new Error(`${field}.type: "${h.type}" is not supported`);
  }
  return { name: h.name, value: { $case: "exact", value: h.value } };
}

export function httpMatch(m: HttpRouteMatch, field: string): ProtoHttpMatch {
  const out: ProtoHttpMatch = { headers: [], queryParams: [] };
  if (m.path) {
    const value = m.path.value ?? "/";
    switch (m.path.type ?? "PathPrefix") {
      case "Exact":
        out.path = { kind: { $case: "exact", value } };
        break;
      case "PathPrefix":
        out.path = { kind: { $case: "prefix", value } };
        break;
      case "RegularExpression":
        out.path = { kind: { $case: "regex", value: checkRegex(value, `${field}.path.value`) } };
        break;
      default:
        throw new Error(`${field}.path.type: "${m.path.type}" is not Exact, PathPrefix or RegularExpression`);
    }
  }
  (m.headers ?? []).forEach((h, i) => out.headers.push(headerMatch(h, `${field}.headers[${i}]`)));
  (m.queryParams ?? []).forEach((q, i) => out.queryParams.push(queryMatch(q, `${field}.queryParams[${i}]`)));
  if (m.method) out.method = httpMethod(m.method);
  return out;
}

export function grpcMatch(m: GrpcRouteMatch, field: string): ProtoGrpcMatch {
  const out: ProtoGrpcMatch = { headers: [] };
  if (m.method) {
    if (m.method.type === "RegularExpression") {
      throw new Error(`${field}.method.type: RegularExpression is not supported by the proxy`);
    }
    out.rpc = { service: m.method.service ?? "", method: m.method.method ?? "" };
  }
  (m.headers ?? []).forEach((h, i) => out.headers.push(headerMatch(h, `${field}.headers[${i}]`)));
  return out;
}

export function headerModifier(m: HeaderModifier): RequestHeaderModifier {
  const headers = (list: { name: string; value: string }[] | undefined) =>
    list?.length
      ? { headers: list.map((h) => ({ name: h.name, value: encoder.encode(h.value) })) }
      : undefined;
  return { add: headers(m.add), set: headers(m.set), remove: m.remove ?? [] };
}

function scheme(s: string): Scheme {
  if (s === "http") return { type: { $case: "registered", value: Scheme_Registered.HTTP } };
  if (s === "https") return { type: { $case: "registered", value: Scheme_Registered.HTTPS } };
  return { type: { $case: "unregistered", value: s } };
}

export function redirect(f: NonNullable<RouteFilter["requestRedirect"]>, field: string): RequestRedirect {
  const out: RequestRedirect = { host: f.hostname ?? "", port: f.port ?? 0, status: f.statusCode ?? 0 };
  if (f.scheme) out.scheme = scheme(f.scheme);
  if (f.path) {
    if (f.path.type === "ReplaceFullPath") {
      out.path = { replace: { $case: "full", value: f.path.replaceFullPath ?? "" } };
    } else if (f.path.type === "ReplacePrefixMatch") {
      out.path = { replace: { $case: "prefix", value: f.path.replacePrefixMatch ?? "" } };
    } else {throw new Error(
        `${field}.path.type: "${f.path.type}" is not ReplaceFullPath or ReplacePrefixMatch`,
      );}
  }
  return out;
}

/** A filter in the form every route flavour can map from. */
export type ConvertedFilter =
  | { kind: "requestHeaderModifier"; value: RequestHeaderModifier }
  | { kind: "responseHeaderModifier"; value: RequestHeaderModifier }
  | { kind: "redirect"; value: RequestRedirect };

export function convertFilter(f: RouteFilter, field: string): ConvertedFilter {
  switch (f.type) {
    case "RequestHeaderModifier":
      if (!f.requestHeaderModifier) throw new Error(`${field}.requestHeaderModifier: missing`);
      return { kind: "requestHeaderModifier", value: headerModifier(f.requestHeaderModifier) };
    case "ResponseHeaderModifier":
      if (!f.responseHeaderModifier) throw new Error(`${field}.responseHeaderModifier: missing`);
      return { kind: "responseHeaderModifier", value: headerModifier(f.responseHeaderModifier) };
    case "RequestRedirect":
      if (!f.requestRedirect) throw new Error(`${field}.requestRedirect: missing`);
      return { kind: "redirect", value: redirect(f.requestRedirect, `${field}.requestRedirect`) };
    default:
      throw new Error(`${field}.type: filter "${f.type}" is not supported`);
  }
}

/** Gateway API precedence among routes: oldest first, then by name. */
export function routeOrder(
  a: { metadata: { creationTimestamp?: string; name: string } },
  b: { metadata: { creationTimestamp?: string; name: string } },
): number {
  const ta = a.metadata.creationTimestamp, tb = b.metadata.creationTimestamp;
  if (ta && tb && ta !== tb) return ta < tb ? -1 : 1;
  if (ta && !tb) return -1;
  if (!ta && tb) return 1;
  return a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0;
}

/** The metadata the proxy reports for a route (its `route_*` metric labels): group, kind, namespace and name. */
export function routeMetadata(
  group: string,
  kind: string,
  r: { metadata: { name: string; namespace?: string } },
): Metadata {
  return {
    kind: {
      $case: "resource",
      value: {
        group,
        kind,
        name: r.metadata.name,
        namespace: r.metadata.namespace ?? "",
        section: "",
        port: 0,
      },
    },
  };
}

/** One converted route, or none when a converter refused it: the route is left out and its status says why. */
export function convertOrSkip<T>(convert: () => T): T[] {
  try {
    return [convert()];
  } catch {
    return [];
  }
}
