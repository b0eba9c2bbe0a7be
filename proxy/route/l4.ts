/**
 * Connection-level (opaque TCP and TLS) routes of an outbound policy, compiled once per update:
 * which route a connection takes (TLS: by the ClientHello's SNI), whether the route refuses it
 * (a `forbidden` filter, as an EgressNetwork with `trafficPolicy: Deny` sends, or an `invalid`
 * one), and the backend it goes to. The outbound listener reads this, never the message.
 */
import type { Backend, OutboundPolicy } from "../../proto/gen_messages/outbound.ts";
import { type Endpoint, endpointFromWire } from "../core/endpoint.ts";
import type { Rng } from "../core/rng.ts";
import { Distribution } from "./distribution.ts";
import { describeMeta, RouteConfigError, type RouteMeta, routeMeta } from "./meta.ts";

export type L4Target =
  | { readonly kind: "forward"; readonly endpoint: Endpoint }
  | { readonly kind: "balancer"; readonly path: string }
  | { readonly kind: "invalid"; readonly message: string };

export interface L4Backend {
  readonly meta: RouteMeta;
  readonly target: L4Target;
  /** Why this backend refuses connections (an `invalid` backend filter), if it does. */
  readonly refused: string | undefined;
}

/** An SNI match: exact (lowercase) or a `*.suffix` wildcard, as reversed labels. */
export type SniMatch = { readonly exact: string } | { readonly suffix: readonly string[] };

export interface L4Route {
  readonly meta: RouteMeta;
  /** TLS routes only; none means every SNI (and a ClientHello without one). */
  readonly snis: readonly SniMatch[];
  /** Set when the rule refuses connections: "forbidden" or the invalid filter's message. */
  readonly refused: string | undefined;
  readonly backends: Distribution<L4Backend>;
}

export interface L4Policy {
  readonly parent: RouteMeta;
  readonly protocol: "opaque" | "tls";
  readonly routes: readonly L4Route[];
}

type AnyFilter = {
  kind?: { $case: "invalid"; value: { message: string } } | { $case: "forbidden"; value: unknown };
};
type AnyRouteBackend = { backend?: Backend; filters: AnyFilter[] };
type AnyDistribution = {
  kind?:
    | { $case: "empty"; value: unknown }
    | { $case: "firstAvailable"; value: { backends: AnyRouteBackend[] } }
    | { $case: "randomAvailable"; value: { backends: { backend?: AnyRouteBackend; weight: number }[] } };
};
type AnyRoute = {
  metadata?: Backend["metadata"];
  snis?: {
    match?: { $case: "exact"; value: string } | { $case: "suffix"; value: { reverseLabels: string[] } };
  }[];
  rules: { backends?: AnyDistribution; filters: AnyFilter[] }[];
};

function refusal(filters: AnyFilter[]): string | undefined {
  for (const f of filters) {
    if (f.kind?.$case === "forbidden") return "forbidden";
    if (f.kind?.$case === "invalid") return `invalid: ${f.kind.value.message}`;
  }
  return undefined;
}

function backend(rb: AnyRouteBackend | undefined, what: string): L4Backend {
  const b = rb?.backend;
  if (!b) throw new RouteConfigError(`${what} has no backend`);
  const meta = routeMeta(b.metadata, `${what} backend`);
  const refused = refusal(rb!.filters);
  const k = b.kind;
  let target: L4Target;
  if (k?.$case === "forward") {
    const endpoint = endpointFromWire(k.value);
    if (!endpoint) throw new RouteConfigError(`${what} backend ${describeMeta(meta)} forwards to no address`);
    target = { kind: "forward", endpoint };
  } else if (k?.$case === "balancer" && k.value.discovery?.kind?.$case === "dst") {
    target = { kind: "balancer", path: k.value.discovery.kind.value.path };
  } else {
    target = { kind: "invalid", message: `backend ${describeMeta(meta)} of ${what} has no target` };
  }
  return { meta, target, refused };
}

function distribution(d: AnyDistribution | undefined, what: string): Distribution<L4Backend> {
  const k = d?.kind;
  switch (k?.$case) {
    case "firstAvailable":
      return Distribution.firstAvailable(k.value.backends.map((b, i) => backend(b, `${what} backend ${i}`)));
    case "randomAvailable":
      return Distribution.randomAvailable(
        k.value.backends.map((b, i) => ({
          backend: backend(b.backend, `${what} backend ${i}`),
          weight: b.weight,
        })),
      );
    case "empty":
      return Distribution.empty();
    default:
      throw new RouteConfigError(`${what} has no backend distribution`);
  }
}

function compileRoute(r: AnyRoute, what: string): L4Route {
  const meta = routeMeta(r.metadata, what);
  // Linkerd's TLS and opaque routes have one rule.
  const rule = r.rules[0];
  if (!rule) throw new RouteConfigError(`${what} (${describeMeta(meta)}) has no rule`);
  const snis: SniMatch[] = (r.snis ?? []).map((s) => {
    const m = s.match;
    if (m?.$case === "exact") return { exact: m.value.toLowerCase().replace(/\.$/, "") };
    if (m?.$case === "suffix") return { suffix: m.value.reverseLabels.map((l) => l.toLowerCase()) };
    throw new RouteConfigError(`${what} (${describeMeta(meta)}) has an empty SNI match`);
  });
  return {
    meta,
    snis,
    refused: refusal(rule.filters),
    backends: distribution(rule.backends, `${what} (${describeMeta(meta)})`),
  };
}

/** The connection-level routes of `p`: its TLS routes, or its opaque ones (also under detect). */
export function compileL4(p: OutboundPolicy): L4Policy | undefined {
  const k = p.protocol?.kind;
  let protocol: "opaque" | "tls";
  let routes: AnyRoute[];
  if (k?.$case === "tls") {
    protocol = "tls";
    routes = k.value.routes;
  } else if (k?.$case === "opaque") {
    protocol = "opaque";
    routes = k.value.routes;
  } else if (k?.$case === "detect" && k.value.opaque) {
    protocol = "opaque";
    routes = k.value.opaque.routes;
  } else return undefined;
  return {
    parent: routeMeta(p.metadata, "outbound policy"),
    protocol,
    routes: routes.map((r, i) => compileRoute(r, `${protocol} route ${i}`)),
  };
}

/** How specifically `m` matches `sni`: exact beats any suffix, a longer suffix a shorter one; -1: no match. */
function sniScore(m: SniMatch, sni: string): number {
  if ("exact" in m) return m.exact === sni ? 1_000 : -1;
  const labels = sni.split(".").reverse();
  if (labels.length <= m.suffix.length) return -1;
  return m.suffix.every((l, i) => labels[i] === l) ? m.suffix.length : -1;
}

/**
 * The route a connection takes. Opaque: the first route (the policy lists them in precedence
 * order). TLS: the route whose SNI match is most specific, routes without SNIs matching anything;
 * the first in order among equals. Undefined when no route matches.
 */
export function selectL4Route(policy: L4Policy, sni: string | undefined): L4Route | undefined {
  if (policy.protocol === "opaque") return policy.routes[0];
  const name = sni?.toLowerCase().replace(/\.$/, "");
  let best: L4Route | undefined;
  let bestScore = -1;
  for (const r of policy.routes) {
    let score = -1;
    if (r.snis.length === 0) score = 0;
    else if (name !== undefined) {
      for (const m of r.snis) score = Math.max(score, sniScore(m, name));
      // A hostname match beats a catch-all route.
      if (score >= 0) score += 1;
    }
    if (score > bestScore) {
      best = r;
      bestScore = score;
    }
  }
  return best;
}

/** The backend for one connection over `route`, or undefined when its distribution has none. */
export function chooseL4Backend(route: L4Route, rng: Rng): L4Backend | undefined {
  return route.backends.choose(rng);
}
