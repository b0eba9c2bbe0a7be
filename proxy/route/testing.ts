/** Builders shared by the route, retry and inbound tests (not used by production code). */
import type { HttpRouteMatch } from "../../proto/gen_messages/http_route.ts";
import type { Backend, HttpRoute, HttpRoute_Rule } from "../../proto/gen_messages/outbound.ts";
import { EMPTY_BODY, HeaderList, type HttpRequest } from "../http/message.ts";
import { msDuration } from "../core/duration.ts";

export function request(
  method: string,
  path: string,
  authority = "web.ns.svc.cluster.local:80",
  headers: string[] = [],
): HttpRequest {
  return {
    method,
    scheme: undefined,
    authority,
    path,
    version: "HTTP/1.1",
    headers: new HeaderList(headers.slice()),
    body: EMPTY_BODY,
  };
}

export const enc = (s: string) => new TextEncoder().encode(s);

export function pathPrefix(p: string): HttpRouteMatch {
  return { path: { kind: { $case: "prefix", value: p } }, headers: [], queryParams: [] };
}

export function pathExact(p: string): HttpRouteMatch {
  return { path: { kind: { $case: "exact", value: p } }, headers: [], queryParams: [] };
}

export function pathRegex(p: string): HttpRouteMatch {
  return { path: { kind: { $case: "regex", value: p } }, headers: [], queryParams: [] };
}

export function balancerBackend(name: string, path = `${name}.ns.svc.cluster.local:80`): Backend {
  return {
    metadata: {
      kind: {
        $case: "resource",
        value: { group: "core", kind: "Service", name, namespace: "ns", section: "", port: 80 },
      },
    },
    kind: {
      $case: "balancer",
      value: {
        discovery: { kind: { $case: "dst", value: { path } } },
        load: { $case: "peakEwma", value: { defaultRtt: msDuration(30), decay: msDuration(10_000) } },
      },
    },
    queue: { capacity: 100, failfastTimeout: msDuration(3_000) },
  };
}

export function rule(matches: HttpRouteMatch[], extra: Partial<HttpRoute_Rule> = {}): HttpRoute_Rule {
  return {
    matches,
    filters: [],
    backends: {
      kind: {
        $case: "firstAvailable",
        value: { backends: [{ backend: balancerBackend("web"), filters: [] }] },
      },
    },
    allowL5dRequestHeaders: false,
    ...extra,
  };
}

export function httpRoute(name: string, rules: HttpRoute_Rule[], hosts: HttpRoute["hosts"] = []): HttpRoute {
  return {
    metadata: {
      kind: {
        $case: "resource",
        value: {
          group: "gateway.networking.k8s.io",
          kind: "HTTPRoute",
          name,
          namespace: "ns",
          section: "",
          port: 0,
        },
      },
    },
    hosts,
    rules,
  };
}
